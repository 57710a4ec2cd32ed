package partneropen

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzVerifyWebhook: any input either verifies or fails with one of the two
// sentinel errors, never panics; and a body verifies only with its own
// signature (flipping the body's last byte must fail).
func FuzzVerifyWebhook(f *testing.F) {
	f.Add("whsec_5a0c9e8b7d6f4e3a2b1c0d9e8f7a6b5c", "1763870700", "ad45dc41cf66f1895d5c1c2ff3bb59da8beacec657fd703fe0268ddae1621a9f", []byte(`{"event":"health.report.created","report_id":"RPT-20261123-0001","open_user_id":42}`))
	f.Add("s", "", "", []byte{})
	f.Add("s", "99999999999", "00", []byte("x"))
	now := time.Unix(1763870710, 0)
	f.Fuzz(func(t *testing.T, secret, ts, sig string, body []byte) {
		err := VerifyWebhook(secret, ts, sig, body, WithVerifyTime(now))
		if err != nil && !errors.Is(err, ErrBadSignature) && !errors.Is(err, ErrStaleTimestamp) {
			t.Fatalf("unexpected error %v", err)
		}
		good := SignWebhook(secret, ts, body)
		if err == nil {
			// Accepted: the presented bytes are exactly the HMAC (only
			// surrounding space and hex letter case may differ) and the
			// timestamp is decimal seconds within the tolerance.
			got, derr := hex.DecodeString(strings.TrimSpace(sig))
			want, _ := hex.DecodeString(good)
			if derr != nil || !bytes.Equal(got, want) {
				t.Fatalf("accepted signature %q for %q", sig, good)
			}
			sec, perr := strconv.ParseInt(strings.TrimSpace(ts), 10, 64)
			if perr != nil || now.Sub(time.Unix(sec, 0)).Abs() > WebhookTolerance {
				t.Fatalf("accepted timestamp %q", ts)
			}
		}
		if VerifyWebhook(secret, ts, good, body, WithVerifyTime(now)) == nil && len(body) > 0 {
			mut := append([]byte(nil), body...)
			mut[len(mut)-1] ^= 0x80
			if VerifyWebhook(secret, ts, good, mut, WithVerifyTime(now)) == nil {
				t.Fatal("a changed body verified")
			}
		}
	})
}

// FuzzDecodeErrorEnvelope: decoding any failure body never panics, and an
// APIError built from it keeps the status and the raw body.
func FuzzDecodeErrorEnvelope(f *testing.F) {
	f.Add([]byte(`{"success":false,"code":"USER_NOT_FOUND","message":"no","timestamp":"x"}`), 404)
	f.Add([]byte(`{"success":false,"code":"VALIDATION_ERROR","message":"bad","errors":{"a":["b"]},"timestamp":"x"}`), 422)
	f.Add([]byte(`{"success":false,"message":"report not found"}`), 404)
	f.Add([]byte(`{"error":"invalid_client"}`), 401)
	f.Add([]byte(`{"code":12,"message":null}`), 500)
	f.Add([]byte(`<html>`), 502)
	f.Fuzz(func(t *testing.T, body []byte, status int) {
		if status < 100 || status > 999 {
			status = 500
		}
		resp := &http.Response{StatusCode: status, Header: http.Header{"Retry-After": {string(body)}}}
		e := decodeError(resp, body)
		if e.Status != status || string(e.Body) != string(body) || e.Error() == "" {
			t.Fatalf("%+v", e)
		}
		code, _, _, ok := DecodeErrorEnvelope(body)
		if !ok && code != "" {
			t.Fatal("code without an envelope")
		}
	})
}

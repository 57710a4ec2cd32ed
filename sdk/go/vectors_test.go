package partneropen

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// vectors is the shared signatures.json, read unchanged.
type vectors struct {
	Credentials struct {
		AppKey        string `json:"app_key"`
		AppSecret     string `json:"app_secret"`
		WebhookSecret string `json:"webhook_secret"`
	} `json:"credentials"`
	SchemeM struct {
		Cases []struct {
			Name       string `json:"name"`
			Timestamp  int64  `json:"timestamp"`
			BodyBase64 string `json:"body_base64"`
			Body       string `json:"body"`
			Signature  string `json:"signature"`
		} `json:"cases"`
	} `json:"scheme_m"`
	SchemeH struct {
		Cases []struct {
			Name       string `json:"name"`
			Method     string `json:"method"`
			URI        string `json:"uri"`
			Timestamp  int64  `json:"timestamp"`
			Nonce      string `json:"nonce"`
			BodyBase64 string `json:"body_base64"`
			SignString string `json:"sign_string"`
			Signature  string `json:"signature"`
		} `json:"cases"`
	} `json:"scheme_h"`
	PluginLaunch struct {
		Cases []struct {
			AppKey      string `json:"app_key"`
			ThirdUserID string `json:"third_user_id"`
			Timestamp   int64  `json:"timestamp"`
			Nonce       string `json:"nonce"`
			Signature   string `json:"signature"`
		} `json:"cases"`
	} `json:"plugin_launch"`
	Webhook struct {
		Cases []struct {
			Name       string `json:"name"`
			Timestamp  int64  `json:"timestamp"`
			BodyBase64 string `json:"body_base64"`
			Signature  string `json:"signature"`
			ValidAt    int64  `json:"valid_at"`
			StaleAt    int64  `json:"stale_at"`
		} `json:"cases"`
	} `json:"webhook"`
}

// loadVectors reads PLATFORM_VECTORS or ../shared/vectors/signatures.json
// beside the repository.
func loadVectors(t *testing.T) vectors {
	t.Helper()
	path := os.Getenv("PLATFORM_VECTORS")
	if path == "" {
		path = filepath.Join("..", "..", "..", "shared", "vectors", "signatures.json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("shared vectors (set PLATFORM_VECTORS): %v", err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	if len(v.SchemeM.Cases) == 0 || len(v.SchemeH.Cases) == 0 || len(v.Webhook.Cases) == 0 || len(v.PluginLaunch.Cases) == 0 {
		t.Fatalf("%s lacks cases", path)
	}
	return v
}

func b64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVectorsSchemeM(t *testing.T) {
	v := loadVectors(t)
	for _, c := range v.SchemeM.Cases {
		body := b64(t, c.BodyBase64)
		if string(body) != c.Body {
			t.Fatalf("%s: body and body_base64 differ", c.Name)
		}
		if got := SignM(v.Credentials.AppKey, strconv.FormatInt(c.Timestamp, 10), v.Credentials.AppSecret, body); got != c.Signature {
			t.Errorf("%s: SignM = %s, want %s", c.Name, got, c.Signature)
		}
	}
}

func TestVectorsSchemeH(t *testing.T) {
	v := loadVectors(t)
	for _, c := range v.SchemeH.Cases {
		body := b64(t, c.BodyBase64)
		ts := strconv.FormatInt(c.Timestamp, 10)
		if got := StringToSignH(c.Method, c.URI, ts, c.Nonce, body); got != c.SignString {
			t.Errorf("%s: signString = %q, want %q", c.Name, got, c.SignString)
		}
		if got := SignH(v.Credentials.AppSecret, c.Method, c.URI, ts, c.Nonce, body); got != c.Signature {
			t.Errorf("%s: SignH = %s, want %s", c.Name, got, c.Signature)
		}
	}
}

func TestVectorsPluginLaunch(t *testing.T) {
	v := loadVectors(t)
	for _, c := range v.PluginLaunch.Cases {
		if got := SignPluginLaunch(v.Credentials.AppSecret, c.AppKey, c.ThirdUserID, strconv.FormatInt(c.Timestamp, 10), c.Nonce); got != c.Signature {
			t.Errorf("plugin sign = %s, want %s", got, c.Signature)
		}
	}
}

func TestVectorsWebhook(t *testing.T) {
	v := loadVectors(t)
	sec := v.Credentials.WebhookSecret
	for _, c := range v.Webhook.Cases {
		body := b64(t, c.BodyBase64)
		ts := strconv.FormatInt(c.Timestamp, 10)
		if got := SignWebhook(sec, ts, body); got != c.Signature {
			t.Errorf("%s: SignWebhook = %s, want %s", c.Name, got, c.Signature)
		}
		if err := VerifyWebhook(sec, ts, c.Signature, body, WithVerifyTime(time.Unix(c.ValidAt, 0))); err != nil {
			t.Errorf("%s: valid delivery refused: %v", c.Name, err)
		}
		if err := VerifyWebhook(sec, ts, c.Signature, body, WithVerifyTime(time.Unix(c.StaleAt, 0))); !errors.Is(err, ErrStaleTimestamp) {
			t.Errorf("%s: stale delivery: err = %v, want ErrStaleTimestamp", c.Name, err)
		}
		// Exactly at the tolerance edge is accepted; one second past is not.
		if err := VerifyWebhook(sec, ts, c.Signature, body, WithVerifyTime(time.Unix(c.Timestamp+300, 0))); err != nil {
			t.Errorf("%s: at +300 s refused: %v", c.Name, err)
		}
		if err := VerifyWebhook(sec, ts, c.Signature, body, WithVerifyTime(time.Unix(c.Timestamp-301, 0))); !errors.Is(err, ErrStaleTimestamp) {
			t.Errorf("%s: at -301 s: err = %v", c.Name, err)
		}
		tampered := append([]byte(nil), body...)
		tampered[len(tampered)-1] ^= 0x01
		if err := VerifyWebhook(sec, ts, c.Signature, tampered, WithVerifyTime(time.Unix(c.ValidAt, 0))); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: tampered body: err = %v, want ErrBadSignature", c.Name, err)
		}
		if err := VerifyWebhook("whsec_other", ts, c.Signature, body, WithVerifyTime(time.Unix(c.ValidAt, 0))); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: wrong secret: err = %v", c.Name, err)
		}
		if err := VerifyWebhook(sec, strconv.FormatInt(c.Timestamp+1, 10), c.Signature, body, WithVerifyTime(time.Unix(c.ValidAt, 0))); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: shifted timestamp: err = %v", c.Name, err)
		}
	}
}

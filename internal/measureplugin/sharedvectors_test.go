package measureplugin

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/sigvectors"
)

// TestSharedVectorsLaunch checks the launch signature against the vectors
// computed from the spec (../shared/vectors/signatures.json), unchanged.
func TestSharedVectorsLaunch(t *testing.T) {
	f := sigvectors.Load(t)
	secret := f.Credentials.AppSecret
	for _, c := range f.PluginLaunch.Cases {
		t.Run(c.Name, func(t *testing.T) {
			ts := sigvectors.Stamp(c.Timestamp)
			if got := c.AppKey + "|" + c.ThirdUserID + "|" + ts + "|" + c.Nonce; got != c.SignString {
				t.Fatalf("signed text %q, vector %q", got, c.SignString)
			}
			if got := Sign(secret, c.AppKey, c.ThirdUserID, ts, c.Nonce); got != c.Signature {
				t.Fatalf("Sign = %s, vector %s", got, c.Signature)
			}
			if !VerifySign(secret, c.AppKey, c.ThirdUserID, ts, c.Nonce, strings.ToUpper(c.Signature)) {
				t.Fatal("VerifySign refuses the vector's signature")
			}
			if VerifySign(secret, c.AppKey, c.ThirdUserID+"x", ts, c.Nonce, c.Signature) {
				t.Fatal("VerifySign accepts the signature for another user")
			}
			if err := CheckTimestamp(ts, time.Unix(c.Timestamp+300, 0)); err != nil {
				t.Fatalf("300 s later: %v", err)
			}
			if err := CheckTimestamp(ts, time.Unix(c.Timestamp+301, 0)); !errors.Is(err, ErrTimestampWindow) {
				t.Fatalf("301 s later: %v, want ErrTimestampWindow", err)
			}
		})
	}
}

package webhooks

import (
	"testing"

	"github.com/healthtech/partner-open-platform/internal/sigvectors"
)

// TestSharedVectorsWebhook checks the webhook signer against the vectors
// computed from the spec (../shared/vectors/signatures.json), unchanged:
// the signature covers the timestamp, a dot and the exact body bytes.
func TestSharedVectorsWebhook(t *testing.T) {
	f := sigvectors.Load(t)
	for _, c := range f.Webhook.Cases {
		t.Run(c.Name, func(t *testing.T) {
			body := sigvectors.Bytes(t, c.Body, c.BodyBase64)
			if got := Sign(f.Credentials.WebhookSecret, sigvectors.Stamp(c.Timestamp), body); got != c.Signature {
				t.Fatalf("Sign = %s, vector %s", got, c.Signature)
			}
		})
	}
}

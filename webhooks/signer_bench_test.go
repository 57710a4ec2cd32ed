package webhooks

import (
	"strconv"
	"testing"
)

// BenchmarkSignManyEndpoints signs one POST for each of 10,000 endpoints in
// turn, as the sender of a node with 10,000 apps, one endpoint each, does:
// allocs/op counts the HMACs keyed again when the sender keeps fewer keyed
// HMACs than it has endpoints.
//
//	go test -run '^$' -bench SignManyEndpoints -benchmem ./webhooks
func BenchmarkSignManyEndpoints(b *testing.B) {
	secrets := make([]string, 10000)
	for i := range secrets {
		secrets[i] = "whsec_" + strconv.Itoa(i)
	}
	body := []byte(`{"event":"user.profile.updated","data":{"nickname":"n"}}`)
	var s signers
	for _, secret := range secrets {
		s.sign(secret, 1700000000, body)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s.sign(secrets[i%len(secrets)], 1700000000, body)
	}
}

package webhooks

import (
	"fmt"
	"testing"
)

// BenchmarkSoleAttempt is one attempt of a delivery a Sole dispatcher
// created (the drain's common case: no read, a POST, the outcome append),
// against an in-process receiver and the in-memory log: allocs/op are the
// sender's and the receiver's together.
func BenchmarkSoleAttempt(b *testing.B) {
	f := newKnownFixture(b, true)
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = fmt.Sprint("d", i)
		f.create(b, ids[i])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for _, id := range ids {
		f.attempt(id)
	}
	b.StopTimer()
	if got := len(f.rcv.posts()); got != b.N {
		b.Fatalf("%d posts, want %d", got, b.N)
	}
}

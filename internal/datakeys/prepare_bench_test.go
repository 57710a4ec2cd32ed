package datakeys_test

import (
	"context"
	"strconv"
	"testing"
)

// BenchmarkPrepare makes the keys of a block of 50 new users, as a node
// does ahead of their registers (one op is one key):
//
//	go test -run '^$' -bench Prepare -benchtime 100x ./internal/datakeys
func BenchmarkPrepare(b *testing.B) {
	k, ctx := newKeys(b), context.Background()
	subjects := make([]string, 50)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		for j := range subjects {
			subjects[j] = "user-" + strconv.Itoa(i*len(subjects)+j+1)
		}
		if err := k.Prepare(ctx, subjects); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(subjects)), "ns/key")
}

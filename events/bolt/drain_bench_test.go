package bolt_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/bolt"
)

// BenchmarkDrainOutcomes records one attempt outcome on each of b.N delivery
// streams, as a webhook drain does: the streams were created together (the
// backlog) after none (a fresh node) or 100,000 older ones (a node that has
// delivered for a while), and 80 senders record their outcomes
// concurrently, so outcomes share commits. names=uuid5 names the streams as
// the platform does (a UUIDv5, scattered over the revision index);
// names=ordered gives them a prefix in creation order, so the revision keys
// a drain writes sit together. order=created records the outcomes in the
// streams' creation order (a backlog retried as it failed); order=shuffled
// in a random one (platformbench's webhook-drain resends its backlog in
// map order, so it drains in that order), which puts each outcome's
// revision key on a leaf of its own. It reports what a commit writes per
// outcome (bbolt's transaction statistics): pages written, bytes of pages
// allocated, nodes materialized, splits.
//
//	go test -run '^$' -bench DrainOutcomes/names=uuid5 -benchtime 8000x -count 3 ./events/bolt/
func BenchmarkDrainOutcomes(b *testing.B) {
	ctx := context.Background()
	created := letters(420)
	outcome := created[:260]
	for _, naming := range []struct {
		name string
		of   func(i int) string
	}{
		{"uuid5", func(i int) string {
			return "delivery-" + uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "%d", i)).String()
		}},
		{"ordered", func(i int) string {
			u := uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "%d", i)).String()
			return fmt.Sprintf("delivery-%08x%s", i, u[8:])
		}},
	} {
		for _, c := range []struct {
			old      int
			shuffled bool
		}{{0, false}, {100_000, false}, {0, true}} {
			old, order := c.old, "created"
			if c.shuffled {
				order = "shuffled"
			}
			b.Run(fmt.Sprintf("names=%s/older=%d/order=%s", naming.name, old, order), func(b *testing.B) {
				s := openT(b, filepath.Join(b.TempDir(), "events.db"))
				create := func(from, to int) {
					for i := from; i < to; i += 500 {
						parts := make([]events.StreamAppend, 0, 500)
						for j := i; j < min(i+500, to); j++ {
							ev := events.Proposed{ID: uuid.Must(uuid.NewV7()).String(), Type: "delivery.created", Data: created}
							parts = append(parts, events.StreamAppend{Stream: naming.of(j), Expected: events.NoStream(), Events: []events.Proposed{ev}})
						}
						if _, err := s.AppendMulti(ctx, parts...); err != nil {
							b.Fatal(err)
						}
					}
				}
				create(0, old+b.N)
				perm := make([]int, b.N)
				for i := range perm {
					perm[i] = i
				}
				if c.shuffled {
					rand.New(rand.NewPCG(1, 2)).Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
				}
				var n atomic.Int64
				var wg sync.WaitGroup
				b.ReportAllocs()
				b.ResetTimer()
				st0, c0, cpu0 := bolt.TxStats(s), bolt.Commits(s), cpuTime(b)
				for range 80 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := int(n.Add(1)) - 1
							if i >= b.N {
								return
							}
							ev := events.Proposed{ID: uuid.Must(uuid.NewV7()).String(), Type: "delivery.attempted", Data: outcome}
							if _, err := s.Append(ctx, naming.of(old+perm[i]), events.Exact(0), ev); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				st, per := bolt.TxStats(s), float64(b.N)
				b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/per, "cpu-µs/op")
				b.ReportMetric(per/float64(bolt.Commits(s)-c0), "outcomes/commit")
				b.ReportMetric(float64(st.GetWrite()-st0.GetWrite())/per, "pages-written/op")
				b.ReportMetric(float64(st.GetPageAlloc()-st0.GetPageAlloc())/per, "page-bytes/op")
				b.ReportMetric(float64(st.GetNodeCount()-st0.GetNodeCount())/per, "nodes/op")
				b.ReportMetric(float64(st.GetSplit()-st0.GetSplit())/per, "splits/op")
			})
		}
	}
}

// letters is a payload of n bytes, a to z over and over.
func letters(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

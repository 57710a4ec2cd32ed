package webhooks

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSendQueueRemove: whatever indexes a claim pass removes, the others
// stay queued in the order found (the due order the sender keeps), with
// the per-app and per-endpoint counts of what is left, and what was
// removed can be queued again.
func TestSendQueueRemove(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	q := newSendQueue()
	var want []string
	next := 0
	add := func(n int) {
		for range n {
			id := fmt.Sprint("d", next)
			next++
			if !q.add(candidate{id: id, key: endpointKey{app: int64(next % 3), endpoint: int64(next % 2)}}) {
				t.Fatalf("add %s refused", id)
			}
			want = append(want, id)
		}
	}
	for round := range 300 {
		add(rng.IntN(20))
		var at []int
		for i := range q.items {
			if rng.IntN(4) == 0 {
				at = append(at, i)
			}
		}
		var gone []string
		for _, i := range slices.Backward(at) {
			gone = append(gone, want[i])
			want = slices.Delete(want, i, i+1)
		}
		q.remove(at)
		var got []string
		apps, keys := map[int64]int{}, map[endpointKey]int{}
		for _, c := range q.items {
			got = append(got, c.id)
			apps[c.key.app]++
			keys[c.key]++
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: queue %v after removing %v, want %v", round, got, at, want)
		}
		if fmt.Sprint(apps) != fmt.Sprint(q.perApp) || fmt.Sprint(keys) != fmt.Sprint(q.perKey) || len(q.has) != len(want) {
			t.Fatalf("round %d: counts per app %v, per endpoint %v, %d ids held; the queue holds %v, %v, %d", round, q.perApp, q.perKey, len(q.has), apps, keys, len(want))
		}
		for _, id := range gone {
			if q.has[id] {
				t.Fatalf("round %d: removed %s still marked queued", round, id)
			}
		}
	}
}

// BenchmarkSendQueueClaim is a backlog's claim passes: a queue refilled to
// refillBatch candidates gives up its head a few at a time, as slots free.
func BenchmarkSendQueueClaim(b *testing.B) {
	q := newSendQueue()
	n := 0
	at := []int{0, 1, 2, 3}
	b.ReportAllocs()
	for b.Loop() {
		if len(q.items) < len(at) {
			for range refillBatch {
				q.add(candidate{id: fmt.Sprint("d", n), key: endpointKey{app: 1, endpoint: 0}})
				n++
			}
		}
		q.remove(at)
	}
}

package batch

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Requests added from many goroutines at once are each sent exactly once,
// in batches sent one at a time, those a send leaves for later included.
func TestGroupSendsEachRequestOnceOneBatchAtATime(t *testing.T) {
	type req struct {
		n    int
		done chan struct{}
	}
	var (
		g        Group[*req]
		mu       sync.Mutex
		sent     = map[int]int{}
		batches  [][]int
		inSend   atomic.Int32
		overlaps atomic.Int32
		leftOnce = map[int]bool{}
	)
	send := func(b []*req) (later []*req) {
		if inSend.Add(1) > 1 {
			overlaps.Add(1)
		}
		defer inSend.Add(-1)
		mu.Lock()
		defer mu.Unlock()
		var ns []int
		for _, r := range b {
			// Every fifth request is left for the next batch once.
			if r.n%5 == 0 && !leftOnce[r.n] {
				leftOnce[r.n] = true
				later = append(later, r)
				continue
			}
			ns = append(ns, r.n)
			sent[r.n]++
			close(r.done)
		}
		batches = append(batches, ns)
		return later
	}
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &req{n: i, done: make(chan struct{})}
			g.Add(r, time.Millisecond, send)
			<-r.done
		}()
	}
	wg.Wait()
	mu.Lock() // the last send may still be recording its batch
	defer mu.Unlock()
	if len(sent) != n {
		t.Fatalf("%d requests sent, want %d", len(sent), n)
	}
	for i, c := range sent {
		if c != 1 {
			t.Fatalf("request %d sent %d times", i, c)
		}
	}
	if o := overlaps.Load(); o != 0 {
		t.Fatalf("%d sends overlapped another", o)
	}
	t.Logf("%d requests in %d batches", n, len(batches))
}

// A request left for later goes before requests queued while its batch was
// being sent.
func TestGroupSendsWhatWasLeftFirst(t *testing.T) {
	var g Group[string]
	first := make(chan struct{})
	release := make(chan struct{})
	var got [][]string
	done := make(chan struct{})
	send := func(b []string) []string {
		got = append(got, append([]string(nil), b...))
		switch len(got) {
		case 1:
			close(first)
			<-release // "b" is queued meanwhile
			return []string{"a"}
		case 2:
			close(done)
		}
		return nil
	}
	g.Add("a", 0, send)
	<-first
	g.Add("b", 0, send)
	close(release)
	<-done
	if len(got) != 2 || len(got[1]) != 2 || got[1][0] != "a" || got[1][1] != "b" {
		t.Fatalf("batches %v, want [[a] [a b]]", got)
	}
}

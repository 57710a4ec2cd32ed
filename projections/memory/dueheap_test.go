package memory

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

// The due heap under a random mix of new, rescheduled and removed
// deliveries pops them in due order, and every key's index cell names
// its position after each change.
func TestDueHeapKeepsOrderAndIndexUnderRandomChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := &dueHeap{at: map[string]*int{}}
	model := map[string]dueKey{}
	base := time.Unix(1700000000, 0)
	check := func(step int) {
		if len(h.keys) != len(model) || len(h.pos) != len(model) || len(h.at) != len(model) {
			t.Fatalf("step %d: heap %d keys, %d cells, %d ids; want %d", step, len(h.keys), len(h.pos), len(h.at), len(model))
		}
		for i, k := range h.keys {
			if cell := h.at[k.id]; cell == nil || h.pos[i] != cell || *cell != i || model[k.id] != k {
				t.Fatalf("step %d: %s at %d: its cell or key is wrong", step, k.id, i)
			}
			if i > 0 && compareDue(h.keys[(i-1)/2], k) > 0 {
				t.Fatalf("step %d: heap order broken at %d", step, i)
			}
		}
	}
	for step := range 5000 {
		id := "d" + strconv.Itoa(rng.IntN(300))
		k := dueKey{next: base.Add(time.Duration(rng.IntN(1000)) * time.Second), feedKey: feedKey{id: id}}
		in := rng.IntN(3) > 0
		h.set(id, k, in)
		if in {
			model[id] = k
		} else {
			delete(model, id)
		}
		check(step)
	}
	popsInDueOrder(t, "", h, model)
	if len(h.at) != 0 || len(h.pos) != 0 {
		t.Fatalf("emptied heap still holds %d ids, %d cells", len(h.at), len(h.pos))
	}
}

// Deliveries of many apps coming and going, as on a node that keeps up:
// an app's heap leaves the queue when it empties and is given to the next
// app with something due. Every app's heap holds exactly its own due
// deliveries in order, and the queue lists only apps with something due.
func TestAppDueKeepsEachAppsDeliveriesAcrossReusedHeaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	q := appDue{apps: map[int64]*dueHeap{}}
	model := map[int64]map[string]dueKey{}
	base := time.Unix(1700000000, 0)
	owner := map[*dueHeap]int64{} // the app each heap last served
	reused := 0
	for step := range 20000 {
		app := int64(rng.IntN(100))
		id := strconv.FormatInt(app, 10) + "/d" + strconv.Itoa(rng.IntN(4))
		k := dueKey{next: base.Add(time.Duration(rng.IntN(1000)) * time.Second), feedKey: feedKey{id: id}}
		in := rng.IntN(2) > 0
		q.set(app, id, k, in)
		if model[app] == nil {
			model[app] = map[string]dueKey{}
		}
		if in {
			model[app][id] = k
		} else {
			delete(model[app], id)
		}
		if len(model[app]) == 0 {
			delete(model, app)
		}
		if len(q.apps) != len(model) {
			t.Fatalf("step %d: %d apps queued, want %d", step, len(q.apps), len(model))
		}
		if len(q.spare) > maxSpareHeaps {
			t.Fatalf("step %d: %d spare heaps kept, at most %d", step, len(q.spare), maxSpareHeaps)
		}
		if h := q.apps[app]; h != nil {
			if was, ok := owner[h]; ok && was != app {
				reused++
			}
			owner[h] = app
		}
	}
	for app, want := range model {
		h := q.apps[app]
		if len(h.keys) != len(want) || len(h.at) != len(want) {
			t.Fatalf("app %d: %d keys, %d ids; want %d", app, len(h.keys), len(h.at), len(want))
		}
		popsInDueOrder(t, fmt.Sprintf("app %d ", app), h, want)
	}
	if reused == 0 {
		t.Fatal("no app's heap was one another app had emptied")
	}
}

// popsInDueOrder pops every key of h and fails t unless they come in due
// order and are exactly want's.
func popsInDueOrder(t *testing.T, what string, h *dueHeap, want map[string]dueKey) {
	t.Helper()
	ordered := make([]dueKey, 0, len(want))
	for _, k := range want {
		ordered = append(ordered, k)
	}
	slices.SortFunc(ordered, compareDue)
	for i, w := range ordered {
		if got := heap.Pop(h).(dueKey); got != w {
			t.Fatalf("%spop %d: %v, want %v", what, i, got, w)
		}
	}
}

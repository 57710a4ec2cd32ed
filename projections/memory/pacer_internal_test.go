package memory

import (
	"slices"
	"testing"
	"time"
)

// A paced write rests only once it has worked a slice, and then for
// WriteRest times what it worked since its last rest.
func TestPacerRestsAfterEachSliceOfWork(t *testing.T) {
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var pauses []time.Duration
	p := &pacer{last: clock, now: func() time.Time { return clock }, pause: func(d time.Duration) {
		pauses = append(pauses, d)
		clock = clock.Add(d)
	}}
	work := func(d time.Duration) { clock = clock.Add(d); p.rest() }
	work(writeSlice / 4)
	work(writeSlice / 4)
	if len(pauses) != 0 {
		t.Fatalf("rested %v after half a slice of work: want no rest yet", pauses)
	}
	work(writeSlice)
	if want := []time.Duration{WriteRest * (writeSlice + writeSlice/2)}; !slices.Equal(pauses, want) {
		t.Fatalf("rests %v after a slice and a half of work: want %v", pauses, want)
	}
	work(writeSlice / 2)
	work(3 * writeSlice)
	if want := WriteRest * (writeSlice/2 + 3*writeSlice); len(pauses) != 2 || pauses[1] != want {
		t.Fatalf("rests %v: want a second of %v (the work since the first rest, not the rest itself)", pauses, want)
	}
	var idle *pacer // a write at a graceful stop has none
	idle.rest()
}

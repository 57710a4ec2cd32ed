package subscribe

import (
	"testing"
	"time"
)

// Read models of one node check the stored progress on a common grid:
// whenever each last checked, the next check of all of them falls on the
// same multiple of the heartbeat, at most one heartbeat away.
func TestUntilGridMeetsOnMultiplesOfTheHeartbeat(t *testing.T) {
	every := 30 * time.Second
	base := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC) // a multiple of 30 s
	for _, off := range []time.Duration{0, time.Nanosecond, 7 * time.Second, every - time.Nanosecond} {
		now := base.Add(off)
		d := untilGrid(every, now)
		if d <= 0 || d > every {
			t.Fatalf("untilGrid at +%s = %s, want within (0, %s]", off, d, every)
		}
		if at := now.Add(d); at.UnixNano()%int64(every) != 0 {
			t.Fatalf("untilGrid at +%s lands at %s, not on the grid", off, at)
		}
		if off > 0 && !now.Add(d).Equal(base.Add(every)) {
			t.Fatalf("untilGrid at +%s lands at %s, want %s", off, now.Add(d), base.Add(every))
		}
	}
}

//go:build linux

package memory

import (
	"testing"
	"time"
)

// A snapshot write is charged the CPU it spends, not the time it waits
// (a slow disk, a loaded machine): Run's gap after a write that waited
// must not grow with the wait. Here the "write" only sleeps.
func TestMeasureCPUChargesWorkNotWaiting(t *testing.T) {
	const wait = 300 * time.Millisecond
	began := time.Now()
	cpu := measureCPU(func() { time.Sleep(wait) })
	if time.Since(began) < wait {
		t.Fatalf("measureCPU returned before its function did")
	}
	if cpu >= wait/2 {
		t.Fatalf("a write that slept %s was charged %s of CPU", wait, cpu)
	}
}

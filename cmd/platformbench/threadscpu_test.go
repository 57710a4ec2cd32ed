package main

import (
	"os"
	"testing"
	"time"
)

// The idle row's CPU is read in nanoseconds: 2 ms of work shows, where
// whole clock ticks (10 ms) read 0 most of the time. A thread's count is
// brought up to date when it stops running, so the work runs on another
// goroutine and the reads come after it parked.
func TestThreadsCPUResolvesLessThanATick(t *testing.T) {
	if _, err := os.Stat("/proc/self/schedstat"); err != nil {
		t.Skip("no schedstat:", err)
	}
	pid := os.Getpid()
	for i := 0; i < 5; i++ {
		time.Sleep(20 * time.Millisecond)
		a := threadsCPU(pid)
		done := make(chan struct{})
		go func() {
			for end := time.Now().Add(2 * time.Millisecond); time.Now().Before(end); {
			}
			close(done)
		}()
		<-done
		time.Sleep(20 * time.Millisecond)
		if d := threadsCPU(pid) - a; d < time.Millisecond || d >= 10*time.Millisecond {
			t.Fatalf("2 ms of work read as %s", d)
		}
	}
}

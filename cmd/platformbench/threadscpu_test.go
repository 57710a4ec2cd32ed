package main

import (
	"os"
	"runtime"
	"slices"
	"testing"
	"time"
)

// The idle row's CPU is read in nanoseconds: 2 ms of work shows, where
// whole clock ticks (10 ms) read 0 most of the time. A thread's count is
// brought up to date when it stops running, so the work runs on another
// goroutine and the reads come after it parked. The work is 2 ms of its
// own thread's CPU, not of the clock: on a loaded machine a spin of 2 ms
// of wall time may run for less.
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
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for start := runtimeOf("/proc/thread-self"); runtimeOf("/proc/thread-self")-start < 2*time.Millisecond; {
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

// Where a row's Postgres CPU went: each process is charged what it spent
// between the readings, one that started in between all of its time, the
// reaped children's total (pid 0) its growth; the largest come first.
func TestTreeSpendChargesEachProcessItsShare(t *testing.T) {
	from := []treeProcess{{pid: 10, cmd: "postmaster", cpu: 5 * time.Millisecond}, {cmd: "(reaped children)", cpu: 40 * time.Millisecond},
		{pid: 11, cmd: "walwriter", cpu: 7 * time.Millisecond}, {pid: 12, cmd: "a backend that exits", cpu: time.Millisecond}}
	to := []treeProcess{{pid: 10, cmd: "postmaster", cpu: 6 * time.Millisecond}, {cmd: "(reaped children)", cpu: 470 * time.Millisecond},
		{pid: 11, cmd: "walwriter", cpu: 9 * time.Millisecond}, {pid: 13, cmd: "autovacuum worker", cpu: 120 * time.Millisecond}}
	got := treeSpend(from, to)
	want := []treeProcess{{cmd: "(reaped children)", cpu: 430 * time.Millisecond}, {pid: 13, cmd: "autovacuum worker", cpu: 120 * time.Millisecond},
		{pid: 11, cmd: "walwriter", cpu: 2 * time.Millisecond}, {pid: 10, cmd: "postmaster", cpu: time.Millisecond}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

package memory

import (
	"runtime"
	"syscall"
	"time"
)

// rusageThread is Linux's RUSAGE_THREAD: the calling thread's usage alone.
const rusageThread = 1

// measureCPU runs f on a thread of its own and returns the CPU that
// thread spent in it (user and system, including the collector's assists
// f's allocations paid), or the wall time if the kernel does not tell.
// Run spaces snapshot writes by their CPU, not their wall time: on a
// loaded machine a write's wall time was three to four times its CPU, so
// the gap (and the tail a crash leaves) grew with the load, not the cost.
func measureCPU(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, after syscall.Rusage
	began := time.Now()
	errBefore := syscall.Getrusage(rusageThread, &before)
	f()
	if errBefore != nil || syscall.Getrusage(rusageThread, &after) != nil {
		return time.Since(began)
	}
	cpu := func(r *syscall.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return cpu(&after) - cpu(&before)
}

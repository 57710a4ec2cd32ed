//go:build !linux

package memory

import "time"

// measureCPU runs f and returns its wall time: only Linux reports one
// thread's CPU (see writecpu_linux.go), so elsewhere the gap between
// snapshot writes follows their wall time, as it always did.
func measureCPU(f func()) time.Duration {
	began := time.Now()
	f()
	return time.Since(began)
}

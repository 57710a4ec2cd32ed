package harness

import (
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
)

// ProfileMeasured writes a CPU profile of the measured phase alone (not the
// node's start or a set-up burst) to $PLATFORM_BENCH_CPUPROFILE/<name>.cpu
// when that variable names a directory (go test's -cpuprofile covers the
// whole binary).
func ProfileMeasured(b *testing.B) {
	dir := os.Getenv("PLATFORM_BENCH_CPUPROFILE")
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, strings.ReplaceAll(b.Name(), "/", "_")+".cpu"))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		pprof.StopCPUProfile()
		f.Close()
	})
}

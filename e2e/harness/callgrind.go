package harness

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// CallgrindMeasured counts the instructions of a benchmark's measured phase
// alone when it runs under scripts/callgrind-measured.sh: it asks the script
// (through the file $PLATFORM_BENCH_CALLGRIND) to switch callgrind's
// instrumentation on at once, and to dump the counts as <name>-<N> and switch it
// off again when the returned func is called. The set-up runs without
// instrumentation, many times faster. The request is a file, not a
// callgrind_control run from the process, whose child's signal callgrind
// does not survive.
func CallgrindMeasured(b *testing.B) (stop func()) {
	f := os.Getenv("PLATFORM_BENCH_CALLGRIND")
	if f == "" {
		return func() {}
	}
	ask := func(args ...string) {
		if err := os.WriteFile(f+".tmp", []byte(strings.Join(args, " ")), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(f+".tmp", f); err != nil {
			b.Fatal(err)
		}
		for deadline := time.Now().Add(WaitBound); ; time.Sleep(50 * time.Millisecond) {
			if _, err := os.Stat(f); os.IsNotExist(err) {
				return
			}
			if time.Now().After(deadline) {
				b.Fatalf("callgrind_control %s: no answer from scripts/callgrind-measured.sh", args)
			}
		}
	}
	ask("-i", "on")
	return func() {
		ask("--dump=" + b.Name() + "-" + strconv.Itoa(b.N))
		ask("-i", "off")
	}
}

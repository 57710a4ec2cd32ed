package harness

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/internal/sharedguard"
)

// WaitBound bounds a test's wait for something asynchronous that must
// happen (a delivery, a lease takeover, a message on a topic): it only ends
// a hang and asserts no speed, so it is generous, since six tests share
// CI's two (often loaded) cores and each runs several times slower than alone.
const WaitBound = 60 * time.Second

// defaultParallel is how many of a package's end-to-end tests run at once unless
// -parallel is given. Every test starts its own nodes, data directories and
// Postgres databases (pgtest), so they share nothing; most of their time is
// spent waiting (Postgres round trips, fsyncs, lease TTLs, bounded polls),
// not computing, so on CI's two cores go test's default (GOMAXPROCS, i.e.
// 2) left the cores idle most of the package's minutes.
const defaultParallel = 6

// Main runs an end-to-end package's tests and returns the exit code; each
// package's TestMain is
//
//	func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }
func Main(m *testing.M) int {
	flag.Parse()
	pgtest.DefaultParallel(defaultParallel)
	// Every follower here reads shared bytes (events/bolt, privacy): the
	// run fails if any of them wrote into what it was handed. Benchmarks
	// run without the guard's CRCs, which would skew them.
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		sharedguard.On()
	}
	code := m.Run()
	if err := sharedguard.Violations(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: shared bytes written by a consumer:", err)
		code = 1
	}
	return code
}

package pgtest

import (
	"flag"
	"strconv"
	"testing"
)

// Parallel is how many tests of a Postgres-backed package run at once
// unless -parallel is given. Each test has its own database and mostly
// waits on the server (creating its database from the template, round
// trips), so go test's default (GOMAXPROCS, 2 on CI) left both cores idle
// for most of such a package's minutes.
const Parallel = 6

// Main runs a Postgres-backed package's tests with Parallel as the default
// of -parallel and returns the exit code; the package's TestMain is
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
func Main(m *testing.M) int {
	flag.Parse()
	DefaultParallel(Parallel)
	return m.Run()
}

// DefaultParallel sets -parallel to n unless the command line gave it; call
// it after flag.Parse.
func DefaultParallel(n int) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			panic(err)
		}
	}
}

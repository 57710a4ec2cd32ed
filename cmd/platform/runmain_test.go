package main

import (
	"os"
	"testing"
)

// TestMain lets the test binary act as the platform binary, so a test can
// run the real main() in a child process (TestBadVariableStopsTheBinary).
// The tests that run whole platform processes are in e2e/process,
// e2e/chaos, e2e/kafkafailover and e2e/upgrade.
func TestMain(m *testing.M) {
	if os.Getenv("PLATFORM_TEST_RUN_MAIN") == "1" {
		os.Args = os.Args[:1] // the -test.* flags are not the platform's
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

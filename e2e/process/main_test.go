// Package process holds the tests that run the platform binary and are
// short enough to share a package: the kill -9 restarts of one node,
// scheme M across two nodes, and the opt-in measurements. The long
// process tests have packages of their own, so that go test runs them
// beside each other: e2e/chaos, e2e/kafkafailover and e2e/upgrade. The
// harness they share is e2e/internal/proc (processes, client, webhook
// receiver) and e2e/internal/workload (the chaos and upgrade load).
package process

import (
	"os"
	"testing"

	"github.com/healthtech/partner-open-platform/e2e/internal/proc"
)

func TestMain(m *testing.M) { os.Exit(proc.Main(m)) }

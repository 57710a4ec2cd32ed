// Package chaos holds the cluster's chaos test: three platform processes
// under a steady signed load while one node at a time is SIGKILLed and
// restarted, then every check of e2e/internal/workload.
package chaos

import (
	"os"
	"testing"

	"github.com/healthtech/partner-open-platform/e2e/internal/proc"
)

func TestMain(m *testing.M) { os.Exit(proc.Main(m)) }

// Package upgrade holds the rolling upgrade test: a node of the previous
// release and a node of this code on one database under a steady load.
package upgrade

import (
	"os"
	"testing"

	"github.com/healthtech/partner-open-platform/e2e/internal/proc"
)

func TestMain(m *testing.M) { os.Exit(proc.Main(m)) }

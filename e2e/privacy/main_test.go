package privacy_test

import (
	"os"
	"testing"

	"github.com/healthtech/partner-open-platform/e2e/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

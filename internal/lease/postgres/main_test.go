package postgres_test

import (
	"os"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

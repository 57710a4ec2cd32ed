// Package process holds the tests that run whole platform processes: the
// three-node chaos test, the rolling upgrade from the previous release,
// the kill -9 restarts, and the opt-in measurements. They live apart from
// cmd/platform so its configuration tests stay fast and these run beside
// the other packages; one go test binary builds cmd/platform once per
// flavour (platformBinary) and every node gets its settings from nodeEnv.
package process

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// platformPkg is the binary the nodes run.
const platformPkg = "github.com/healthtech/partner-open-platform/cmd/platform"

// binDir holds the builds of this test binary's run.
var binDir string

// builds are the plain [0] and race-enabled [1] builds of platformPkg.
var builds [2]struct {
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "e2e-process-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// platformBinary builds cmd/platform once per test binary and flavour and
// returns its path: with race, under the race detector (the kill -9 tests'
// single node, whose races then show in its log), else a plain build (the
// cluster tests load several nodes, and a race-enabled node is several
// times slower on a 2-core machine). Go's build cache makes either quick
// after the first build.
func platformBinary(t testing.TB, race bool) string {
	t.Helper()
	args, name, b := []string{"build"}, "platform", &builds[0]
	if race {
		args, name, b = append(args, "-race"), "platform-race", &builds[1]
	}
	b.once.Do(func() {
		bin := filepath.Join(binDir, name)
		if out, err := exec.Command("go", append(args, "-o", bin, platformPkg)...).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", platformPkg, err, out)
			return
		}
		b.path = bin
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// nodeEnv is the environment of a platform node on the Postgres database
// db (event store and read models) with the given master key and tokens,
// logging text, without Kafka; extra settings follow and win (exec keeps
// the last value of a repeated variable).
func nodeEnv(db, masterKey, adminToken, internalToken string, extra ...string) []string {
	return append([]string{
		"PLATFORM_EVENTSTORE_URL=" + db,
		"PLATFORM_POSTGRES_URL=" + db,
		"PLATFORM_ESDB_URL=",
		"PLATFORM_PORTAL_BASE_URL=https://open.example.com",
		"PLATFORM_MASTER_KEY=" + masterKey,
		"PLATFORM_ADMIN_TOKEN=" + adminToken,
		"PLATFORM_INTERNAL_TOKEN=" + internalToken,
		"PLATFORM_LOG_FORMAT=text",
		"PLATFORM_KAFKA_BROKERS=",
	}, extra...)
}

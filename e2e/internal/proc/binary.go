package proc

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/healthtech/partner-open-platform/e2e/internal/gobuild"
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

// Main runs a test package's tests with a folder for its builds of the
// platform (Binary), removed afterwards; a package's TestMain is
// os.Exit(proc.Main(m)).
func Main(m *testing.M) int {
	dir, err := os.MkdirTemp("", "e2e-process-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	return code
}

// Binary builds cmd/platform once per test binary and flavour and
// returns its path: with race, under the race detector (the kill -9 tests'
// single node, whose races then show in its log), else a plain build (the
// cluster tests load several nodes, and a race-enabled node is several
// times slower on a 2-core machine). The process test packages run at once
// and each needs the same binary: gobuild links each flavour once per run
// (the plain one in scripts/test.sh's prebuild, when it makes one), and
// each test binary runs its own copy, which a later build cannot change
// under its nodes.
func Binary(t testing.TB, race bool) string {
	t.Helper()
	var args []string
	name, b := "platform", &builds[0]
	if race {
		args, name, b = []string{"-race"}, "platform-race", &builds[1]
	}
	b.once.Do(func() {
		built, err := gobuild.Build(".", name, platformPkg, args...)
		if err != nil {
			b.err = err
			return
		}
		bin := filepath.Join(binDir, name)
		if b.err = gobuild.Copy(built, bin); b.err == nil {
			b.path = bin
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// envRaceNodes, set to 1, runs the nodes as a race-enabled build, so the
// race detector watches them too; they are then several times slower.
const envRaceNodes = "PLATFORM_TEST_CLUSTER_RACE"

// Program is the program the cluster's nodes run: the plain build of
// cmd/platform (the cluster tests load the nodes, and a race-enabled node
// is several times slower on these 2-core machines), or the race-enabled
// one with envRaceNodes.
func Program(t *testing.T) []string {
	t.Helper()
	return []string{Binary(t, os.Getenv(envRaceNodes) == "1")}
}

// NodeEnv is the environment of a platform node on the Postgres database
// db (event store and read models) with the given master key and tokens,
// logging text, without Kafka; extra settings follow and win (exec keeps
// the last value of a repeated variable).
func NodeEnv(db, masterKey, adminToken, internalToken string, extra ...string) []string {
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

// FreeAddr is a loopback address with a port free a moment ago.
func FreeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// RandomHex is n random bytes in hex (tokens, keys, run names).
func RandomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// EnvInt reads a positive whole number from the environment variable
// name, def when it is unset.
func EnvInt(t testing.TB, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive whole number", name, v)
	}
	return n
}

package proc

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
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
// times slower on a 2-core machine). Go's build cache makes either quick
// after the first build.
func Binary(t testing.TB, race bool) string {
	t.Helper()
	args, name, b := []string{"build"}, "platform", &builds[0]
	if race {
		args, name, b = append(args, "-race"), "platform-race", &builds[1]
	}
	b.once.Do(func() {
		bin := filepath.Join(binDir, name)
		if b.err = buildShared(args, name, bin); b.err == nil {
			b.path = bin
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// buildShared runs go build (args) of platformPkg into a folder this
// checkout's test binaries share, one at a time under a file lock, and
// copies the result to bin. The process test packages run at once and
// each needs the same binary: the first links it, and go build finds the
// others' target up to date (it does not link again a file whose build ID
// matches), so a run links each flavour once rather than once per package.
// Each test binary runs its own copy, which a later build cannot change
// under its nodes.
func buildShared(args []string, name, bin string) error {
	dir, err := sharedBuildDir()
	if err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(dir, name+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	shared := filepath.Join(dir, name)
	if out, err := exec.Command("go", append(args, "-o", shared, platformPkg)...).CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", platformPkg, err, out)
	}
	return copyFile(shared, bin)
}

// sharedBuildDir is a folder in the user's cache directory (where the
// upgrade test keeps the previous release too) named after the checkout
// (the folder of go.mod above the working directory), so two checkouts
// never share a build.
func sharedBuildDir() (string, error) {
	root, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(root)
		if up == root {
			return "", errors.New("no go.mod above the working directory")
		}
		root = up
	}
	sum := sha256.Sum256([]byte(root))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "partner-open-platform", "e2e-build-"+hex.EncodeToString(sum[:8]))
	return dir, os.MkdirAll(dir, 0o700)
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
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
func EnvInt(t *testing.T, name string, def int) int {
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

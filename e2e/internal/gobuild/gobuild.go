// Package gobuild links the Go commands the end-to-end tests run (the
// platform, the partner's CLI) once per run rather than once per test
// binary. Test binaries that run at once share one build folder, and each
// runs go build there under a file lock: go build does not link again a
// target whose build ID matches, so the first one links a command and the
// others find it up to date. scripts/test.sh gives a run its own folder
// (DirEnv) and links the platform there, beside go test, under the same
// lock (flock(1) on <folder>/platform.lock), so the platform its SDK and
// browser suites run is the one the process tests ran.
package gobuild

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// DirEnv names the build folder scripts/test.sh gives a run (and removes
// after it). Unset, the folder is one in the user's cache directory named
// after the checkout, so two checkouts never share a build.
const DirEnv = "PLATFORM_TEST_BUILD_DIR"

// Build runs `go build args -o <folder>/name pkg` in dir (a folder of the
// module that holds pkg) under <folder>/name.lock and returns the target's
// path. The target is replaced only by a later Build of the same name, and
// a build of unchanged sources leaves it as it is.
func Build(dir, name, pkg string, args ...string) (string, error) {
	folder, err := buildDir()
	if err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(folder, name+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	target := filepath.Join(folder, name)
	cmd := exec.Command("go", append(append([]string{"build"}, args...), "-o", target, pkg)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	return target, nil
}

// Root is the repository's root: the folder of the go.mod above the
// working directory (a test binary runs in its package's folder).
func Root() (string, error) {
	root, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			return root, nil
		}
		up := filepath.Dir(root)
		if up == root {
			return "", errors.New("no go.mod above the working directory")
		}
		root = up
	}
}

// buildDir is DirEnv's folder, else the checkout's folder in the user's
// cache directory (where the upgrade test keeps the previous release too).
func buildDir() (string, error) {
	if dir := os.Getenv(DirEnv); dir != "" {
		return dir, os.MkdirAll(dir, 0o700)
	}
	root, err := Root()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(root))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "partner-open-platform", "e2e-build-"+hex.EncodeToString(sum[:8]))
	return dir, os.MkdirAll(dir, 0o700)
}

// Copy copies the file from to a new executable file to, so a test runs
// a copy that no later build can change under it. The copy is written by
// cp(1) where there is one, not by this process: a file this process holds
// open for writing is inherited by every child another test forks
// meanwhile (until that child's exec closes it), and executing the copy
// while any such child lives fails with ETXTBSY ("text file busy").
func Copy(from, to string) error {
	if cp, err := exec.LookPath("cp"); err == nil {
		if out, err := exec.Command(cp, from, to).CombinedOutput(); err != nil {
			return fmt.Errorf("cp %s %s: %w: %s", from, to, err, out)
		}
		return os.Chmod(to, 0o755)
	}
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

package postgres_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/lease"
	leasepg "github.com/healthtech/partner-open-platform/internal/lease/postgres"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// The holder process: run by the tests below as this test binary.
const (
	envHolderURL = "LEASE_TEST_HOLDER_URL"
	envHolderTTL = "LEASE_TEST_HOLDER_TTL"
)

// TestHolderProcess is the other process of the tests below, not a test:
// it takes the lease "job", keeps it renewed, says "held <token>", and says
// "lost" and exits once it learns it lost it.
func TestHolderProcess(t *testing.T) {
	url := os.Getenv(envHolderURL)
	if url == "" {
		t.Skip("the holder process of TestLeaseEndsWithItsProcess")
	}
	ttl, err := time.ParseDuration(os.Getenv(envHolderTTL))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := leasepg.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Acquire(ctx, "job", "holder-process", ttl)
	if err != nil {
		t.Fatal(err)
	}
	h := lease.Hold(ctx, s, l, ttl, nil)
	fmt.Printf("held %d\n", l.Token)
	<-h.Lost()
	fmt.Printf("lost: %v\n", h.Err())
}

// holderProcess starts the holder process on url and waits until it holds
// the lease.
func holderProcess(t *testing.T, url string, ttl time.Duration) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHolderProcess$", "-test.v")
	cmd.Env = append(os.Environ(), envHolderURL+"="+url, envHolderTTL+"="+ttl.String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "held ") {
			return cmd, lines
		}
	}
	t.Fatalf("the holder process ended before holding the lease: %v", lines.Err())
	return nil, nil
}

// takeover campaigns for "job" from this process and returns how long it
// took, failing after limit.
func takeover(t *testing.T, s lease.Store, ttl, limit time.Duration) (lease.Lease, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	start := time.Now()
	h, err := lease.Campaign(ctx, s, "job", "survivor", ttl, nil)
	if err != nil {
		t.Fatalf("no takeover within %v: %v", limit, err)
	}
	took := time.Since(start)
	l := h.Lease()
	if err := h.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	return l, took
}

// TestLeaseEndsWithItsProcess kills the holder process with SIGKILL: its
// connection closes and the lease is taken within a poll, not after the
// TTL (a minute here).
func TestLeaseEndsWithItsProcess(t *testing.T) {
	t.Parallel()
	url := pgtest.New(t)
	s, err := leasepg.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const ttl = time.Minute
	cmd, _ := holderProcess(t, url, ttl)
	if _, err := s.Acquire(context.Background(), "job", "survivor", ttl); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("the live holder process's lease was taken: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	l, took := takeover(t, s, ttl, 10*time.Second)
	t.Logf("lease taken %v after SIGKILL of its holder (ttl %v), token %d", took.Round(time.Millisecond), ttl, l.Token)
}

// TestFrozenHolderLapsesByTTL freezes the holder process with SIGSTOP: its
// connection stays open (the kernel still answers for it), so only the TTL
// frees the lease. Resumed, the holder learns it lost the lease.
func TestFrozenHolderLapsesByTTL(t *testing.T) {
	t.Parallel()
	url := pgtest.New(t)
	s, err := leasepg.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const ttl = 2 * time.Second
	cmd, lines := holderProcess(t, url, ttl)
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	l, took := takeover(t, s, time.Minute, 30*ttl)
	t.Logf("lease taken %v after SIGSTOP of its holder (ttl %v), token %d", took.Round(time.Millisecond), ttl, l.Token)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	lost := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), "lost") {
				lost <- lines.Text()
				return
			}
		}
		close(lost)
	}()
	select {
	case line, ok := <-lost:
		if !ok || !strings.Contains(line, lease.ErrLost.Error()) {
			t.Fatalf("the resumed holder said %q, want that it lost the lease", line)
		}
	case <-time.After(30 * ttl):
		t.Fatal("the resumed holder never learnt it lost the lease")
	}
}

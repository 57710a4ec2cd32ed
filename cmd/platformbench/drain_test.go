package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// The platform's CPU is read from /proc/PID/stat, whose command name may
// hold spaces and parentheses: fields count from the last ')'.
func TestParseStatCPU(t *testing.T) {
	line := "4242 (plat form) x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 150 25 0 0 20 0 12 0 99 0 0"
	got, err := parseStatCPU(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := 175 * clockTick; got != want {
		t.Fatalf("cpu = %s, want %s", got, want)
	}
	for _, bad := range []string{"", "4242 plat S 1", "4242 (p) S 1 2 3", "4242 (p) S 1 4242 4242 0 -1 4194560 1234 0 0 0 x 25"} {
		if _, err := parseStatCPU(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// Reading this test's own process works where /proc exists, and CPU only grows.
func TestPlatformCPUOfOwnProcess(t *testing.T) {
	b := &Bench{Opt: Options{PlatformPID: os.Getpid()}}
	a, err := b.platformCPU()
	if err != nil {
		t.Skip("no /proc:", err)
	}
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	c, err := b.platformCPU()
	if err != nil || c < a {
		t.Fatalf("second read %s (%v) after %s", c, err, a)
	}
	if _, err := (&Bench{}).platformCPU(); err == nil {
		t.Fatal("no pid: no error")
	}
}

// The allocation count is go_memstats_mallocs_total's value, not a
// neighbour's whose name it prefixes; a page without it is an error.
func TestParseMallocs(t *testing.T) {
	page := "# HELP go_memstats_mallocs_total Total number of heap objects allocated.\n# TYPE go_memstats_mallocs_total counter\ngo_memstats_mallocs_total_x 1\ngo_memstats_mallocs_total 1.234567e+06\ngo_memstats_frees_total 9\n"
	got, err := parseMallocs(strings.NewReader(page))
	if err != nil || got != 1234567 {
		t.Fatalf("mallocs = %v (%v), want 1234567", got, err)
	}
	if _, err := parseMallocs(strings.NewReader("go_memstats_frees_total 9\n")); err == nil {
		t.Fatal("a page without the counter: no error")
	}
}

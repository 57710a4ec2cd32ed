package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"testing"
	"time"
)

// updateHelp rewrites testdata/help.golden from -help instead of comparing.
var updateHelp = flag.Bool("update-help", false, "rewrite testdata/help.golden from the -help text")

const helpGolden = "testdata/help.golden"

// TestHelpTextIsGolden pins the whole -help text an operator reads: every
// flag, its variable, its accepted values and its default, in order. A
// change to the settings table shows up here as a reviewable diff
// (go test -run TestHelpTextIsGolden -update-help from cmd/platform).
func TestHelpTextIsGolden(t *testing.T) {
	var usage bytes.Buffer
	if _, err := loadConfig([]string{"-help"}, func(string) string { return "" }, &usage); !errors.Is(err, errHelp) {
		t.Fatalf("-help: %v", err)
	}
	if *updateHelp {
		if err := os.WriteFile(helpGolden, usage.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(helpGolden)
	if err != nil {
		t.Fatal(err)
	}
	if got := usage.String(); got != string(want) {
		t.Errorf("-help text differs from %s (rerun with -update-help if the change is meant):\ngot:\n%s", helpGolden, got)
	}
}

// TestShortDuration: the defaults shown in -help and the docs read as an
// operator writes them, and each parses back to the same duration.
func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		5 * time.Minute: "5m", time.Hour: "1h", 12 * time.Hour: "12h", 90 * time.Minute: "1h30m",
		10 * time.Second: "10s", 100 * time.Millisecond: "100ms", 0: "0s", 61 * time.Second: "1m1s",
	} {
		got := shortDuration(d)
		if got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
		if back, err := time.ParseDuration(got); err != nil || back != d {
			t.Errorf("%q parses to %v, %v; want %v", got, back, err, d)
		}
	}
}

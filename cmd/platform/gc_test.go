package main

import (
	"runtime/debug"
	"testing"
)

// TestDefaultGCOnlyWhenUnset: the platform raises the collector's target
// only when the operator chose nothing; GOGC or GOMEMLIMIT, even set to
// Go's own defaults, leave the runtime's setting exactly as it was.
func TestDefaultGCOnlyWhenUnset(t *testing.T) {
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	env := func(kv map[string]string) func(string) string {
		return func(k string) string { return kv[k] }
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"GOGC", map[string]string{"GOGC": "100"}},
		{"GOGC off", map[string]string{"GOGC": "off"}},
		{"GOMEMLIMIT", map[string]string{"GOMEMLIMIT": "512MiB"}},
	} {
		debug.SetGCPercent(137)
		percent, applied := setDefaultGC(env(tc.env))
		if applied || percent != 137 {
			t.Errorf("%s set: got (%d, %v), want the runtime's 137 left alone", tc.name, percent, applied)
		}
		if now := debug.SetGCPercent(137); now != 137 {
			t.Errorf("%s set: the runtime's target changed to %d", tc.name, now)
		}
	}
	debug.SetGCPercent(100)
	percent, applied := setDefaultGC(env(nil))
	if !applied || percent != defaultGCPercent {
		t.Fatalf("nothing set: got (%d, %v), want (%d, true)", percent, applied, defaultGCPercent)
	}
	if now := debug.SetGCPercent(100); now != defaultGCPercent {
		t.Fatalf("nothing set: the runtime's target is %d, want %d", now, defaultGCPercent)
	}
}

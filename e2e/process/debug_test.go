package process

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/e2e/internal/proc"
)

// An operator profiles a live node through the debug listener: its CPU
// profile, heap, goroutines, blocking and execution trace, each readable by
// the Go tools. The partner listener never serves those paths.
func TestDebugListenerServesRuntimeProfiles(t *testing.T) {
	debug := "http://" + proc.FreeAddr(t)
	s := startServer(t, t.TempDir(), "PLATFORM_DEBUG_ADDR="+strings.TrimPrefix(debug, "http://"))
	s.createApp() // some requests, so the profiles hold a node at work

	get := func(url string) (int, []byte) {
		t.Helper()
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, b
	}
	gzipped := []byte{0x1f, 0x8b} // a pprof protobuf profile is gzip-compressed
	for _, p := range []string{"/debug/pprof/heap", "/debug/pprof/block", "/debug/pprof/mutex", "/debug/pprof/profile?seconds=1"} {
		code, body := get(debug + p)
		if code != http.StatusOK || !bytes.HasPrefix(body, gzipped) {
			t.Errorf("GET %s: %d, %d bytes starting %q; want 200 and a gzip-compressed profile", p, code, len(body), body[:min(len(body), 16)])
		}
	}
	if code, body := get(debug + "/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !bytes.Contains(body, []byte("goroutine profile:")) {
		t.Errorf("goroutine dump: %d %q", code, body[:min(len(body), 64)])
	}
	// Sampling is on while the listener is: a node always has blocked
	// goroutines (followers, timers), so the profile names some.
	if code, body := get(debug + "/debug/pprof/block?debug=1"); code != http.StatusOK || !bytes.Contains(body, []byte("cycles/second=")) || !bytes.Contains(body, []byte("@ 0x")) {
		t.Errorf("block profile with no samples: %d %q", code, body[:min(len(body), 200)])
	}
	if code, body := get(debug + "/debug/pprof/trace?seconds=1"); code != http.StatusOK || !bytes.HasPrefix(body, []byte("go 1.")) {
		t.Errorf("execution trace: %d, %d bytes starting %q", code, len(body), body[:min(len(body), 16)])
	}
	if code, _ := get(s.base + "/debug/pprof/heap"); code == http.StatusOK {
		t.Errorf("the partner listener serves /debug/pprof/heap")
	}
}

package webhooks_test

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/e2e/internal/gobuild"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// openplatformBuild links the partner's command (sdk/go/cmd/openplatform,
// its own module) once per run (gobuild).
var openplatformBuild = sync.OnceValues(func() (string, error) {
	root, err := gobuild.Root()
	if err != nil {
		return "", err
	}
	return gobuild.Build(filepath.Join(root, "sdk", "go"), "openplatform", "./cmd/openplatform")
})

// openplatform is a copy of the partner's command in the test's own
// temporary folder.
func openplatform(t *testing.T) string {
	t.Helper()
	built, err := openplatformBuild()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "openplatform")
	if err := gobuild.Copy(built, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// listenRun is one `openplatform listen` process and the lines it printed.
type listenRun struct {
	t     *testing.T
	cmd   *exec.Cmd
	lines chan string
	all   []string
	done  chan error
}

func cli(t *testing.T, p *harness.Platform, a *harness.App, args ...string) *exec.Cmd {
	cmd := exec.Command(openplatform(t), args...)
	cmd.Env = append(os.Environ(), "OPENPLATFORM_BASE_URL="+p.Srv.URL, "OPENPLATFORM_APP_ID="+strconv.FormatInt(a.ID, 10),
		"OPENPLATFORM_APP_KEY="+a.Key, "OPENPLATFORM_APP_SECRET="+a.Secret, "OPENPLATFORM_LISTEN_SECRET=")
	return cmd
}

func startListen(t *testing.T, p *harness.Platform, a *harness.App, args ...string) *listenRun {
	t.Helper()
	return startListenAt(t, p, a, p.Srv.URL, args...)
}

// startListenAt is startListen reaching the platform at base (a proxy).
func startListenAt(t *testing.T, p *harness.Platform, a *harness.App, base string, args ...string) *listenRun {
	t.Helper()
	cmd := cli(t, p, a, append([]string{"listen", "--interval", "200ms"}, args...)...)
	cmd.Env = append(cmd.Env, "OPENPLATFORM_BASE_URL="+base) // the last value of a key wins
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l := &listenRun{t: t, cmd: cmd, lines: make(chan string, 100), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			l.lines <- sc.Text()
		}
		close(l.lines)
		err := cmd.Wait()
		if err != nil {
			err = fmt.Errorf("%w; stderr: %s", err, stderr.String())
		}
		l.done <- err
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return l
}

// next waits for the next printed line that matches re.
func (l *listenRun) next(re string) []string {
	l.t.Helper()
	pattern := regexp.MustCompile(re)
	deadline := time.After(harness.WaitBound)
	for {
		select {
		case line, ok := <-l.lines:
			if !ok {
				l.t.Fatalf("listen ended before a line matching %q; printed:\n%s", re, strings.Join(l.all, "\n"))
			}
			l.all = append(l.all, line)
			if m := pattern.FindStringSubmatch(line); m != nil {
				return m
			}
		case <-deadline:
			l.t.Fatalf("no line matching %q; printed:\n%s", re, strings.Join(l.all, "\n"))
		}
	}
}

// interrupt is Ctrl-C: listen stops cleanly, exit status 0, and says the
// cursor it will resume after.
func (l *listenRun) interrupt() string {
	l.t.Helper()
	if err := l.cmd.Process.Signal(syscall.SIGINT); err != nil {
		l.t.Fatal(err)
	}
	m := l.next(`^Stopped after cursor (\S+) `)
	for line := range l.lines {
		l.all = append(l.all, line)
	}
	select {
	case err := <-l.done:
		if err != nil {
			l.t.Fatalf("listen after Ctrl-C: %v", err)
		}
	case <-time.After(harness.WaitBound):
		l.t.Fatal("listen did not exit after Ctrl-C")
	}
	return m[1]
}

type feedEvent struct {
	Cursor     string          `json:"cursor"`
	DeliveryID string          `json:"delivery_id"`
	Event      string          `json:"event"`
	Payload    json.RawMessage `json:"payload"`
}

// feedAfter reads the app's feed after cursor until it holds n events.
func feedAfter(t *testing.T, a *harness.App, cursor string, n int) []feedEvent {
	t.Helper()
	deadline := time.Now().Add(harness.WaitBound)
	for {
		var page struct {
			Events []feedEvent `json:"events"`
		}
		a.Expect("GET", "/open/v1/webhooks/events?limit=1000&after="+cursor, nil, http.StatusOK, "0").Data(t, &page)
		if len(page.Events) >= n {
			return page.Events
		}
		if time.Now().After(deadline) {
			t.Fatalf("feed after %s has %d events, want %d", cursor, len(page.Events), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func sign(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// A partner with no public endpoint runs `openplatform listen` against a
// local receiver: a triggered sample event and the real events of a
// register reach it with the feed's exact bytes and the platform's headers,
// signed with the secret listen printed (the receiver's verification
// passes, another secret's does not); one line per event shows the local
// answer; Ctrl-C stops it cleanly, and the next listen resumes after the
// saved cursor. A listen signing with another secret gets the receiver's
// 401, printed as such.
func TestListenForwardsTriggeredAndRealEventsSigned(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		p := harness.Start(t, cfg)
		a := p.CreateApp("local-dev") // sandbox, no webhook URL: nothing public
		rcv := harness.NewReceiver(t)
		cursorFile := filepath.Join(t.TempDir(), "listen.cursor")

		// An event before listen starts is not forwarded: listen starts now.
		before := cli(t, p, a, "trigger", "user.profile.updated")
		if out, err := before.CombinedOutput(); err != nil {
			t.Fatalf("trigger: %v %s", err, out)
		}
		start := feedAfter(t, a, "", 1)

		// Listen reaches the node through a proxy that counts its feed reads.
		proxy, feedReads := countingProxy(t, p.Srv.URL, "/open/v1/webhooks/events")
		listenStarted := time.Now()
		l := startListenAt(t, p, a, proxy, "--forward-to", rcv.Srv.URL+"/hook", "--cursor-file", cursorFile)
		secret := l.next(`^Ready! Forwarding to \S+/hook\. Your webhook signing secret is (whsec_[0-9a-f]{48}) `)[1]
		rcv.Secret = secret

		trig := cli(t, p, a, "trigger", "health.report.created")
		out, err := trig.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "Triggered health.report.created") {
			t.Fatalf("trigger: %v %s", err, out)
		}
		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-listen"), http.StatusCreated, "0").Data(t, &reg)

		// The sample and the register's group and two members.
		want := feedAfter(t, a, start[0].Cursor, 4)
		got := rcv.WaitFor(4)
		rcv.Quiet(4, 500*time.Millisecond)
		for i, w := range got {
			f := want[i]
			if !w.Verified || w.ID != f.DeliveryID || w.Event != f.Event || !bytes.Equal(w.Body, f.Payload) {
				t.Fatalf("webhook %d: %+v (body %s)\nfeed: %+v (payload %s)", i, w, w.Body, f, f.Payload)
			}
			if w.Signature != sign(secret, w.Timestamp, w.Body) || w.Signature == sign(a.WebhookSecret, w.Timestamp, w.Body) ||
				w.Signature == sign("whsec_"+strings.Repeat("0", 48), w.Timestamp, w.Body) {
				t.Fatalf("webhook %d is not signed with the printed secret alone", i)
			}
			l.next(fmt.Sprintf(`  --> %s \[%s\]  <-- \[200\] POST %s/hook$`, regexp.QuoteMeta(f.Event), f.DeliveryID, regexp.QuoteMeta(rcv.Srv.URL)))
		}
		var sample struct {
			Event         string `json:"event"`
			OpenUserID    int64  `json:"open_user_id"`
			ChannelUserID string `json:"channel_user_id"`
		}
		if err := json.Unmarshal(got[0].Body, &sample); err != nil || sample.Event != "health.report.created" || sample.OpenUserID != 1<<53-1 || sample.ChannelUserID != "sandbox-user" {
			t.Fatalf("triggered sample %s (%v)", got[0].Body, err)
		}
		events := map[string]int{}
		for _, w := range got[1:] {
			var body harness.UserWebhook
			if err := json.Unmarshal(w.Body, &body); err != nil || body.OpenUserID != reg.OpenUserID || body.ChannelUserID != "u-listen" {
				t.Fatalf("register webhook %s (%v)", w.Body, err)
			}
			events[w.Event]++
		}
		if fmt.Sprint(events) != "map[user.family_group.created:1 user.family_member.created:2]" {
			t.Fatalf("register events %v", events)
		}

		// Caught up, listen holds one read open at the node instead of
		// polling every --interval (200ms): the session so far, with this
		// idle second, took a few reads (its start, the long-polls the
		// events ended, one per 20 s wait), where polling took one per
		// 200 ms of it.
		time.Sleep(time.Second)
		reads, session := feedReads(), time.Since(listenStarted)
		if bound := 8 + int(session/(20*time.Second)); reads > bound {
			t.Fatalf("listen read the feed %d times in %v: want at most %d (long-poll, not polling)", reads, session.Round(time.Millisecond), bound)
		}
		t.Logf("listen read the feed %d times in %v", reads, session.Round(time.Millisecond))

		last := l.interrupt()
		saved, err := os.ReadFile(cursorFile)
		if err != nil || last != want[3].Cursor || strings.TrimSpace(string(saved)) != last {
			t.Fatalf("stopped after %s, saved %q (%v), want %s", last, saved, err, want[3].Cursor)
		}

		// While nobody listens an order ships (a sample); the next listen
		// resumes after the saved cursor and forwards it alone. It signs
		// with another secret than the receiver knows: the receiver's
		// verification fails and its 401 is printed.
		if out, err := cli(t, p, a, "trigger", "order.shipped").CombinedOutput(); err != nil {
			t.Fatalf("trigger: %v %s", err, out)
		}
		shipped := feedAfter(t, a, last, 1)
		l2 := startListen(t, p, a, "--forward-to", rcv.Srv.URL+"/hook", "--cursor-file", cursorFile, "--secret", "whsec_"+strings.Repeat("ab", 24))
		l2.next(`^Resuming after cursor ` + regexp.QuoteMeta(last) + `$`)
		l2.next(`^Ready! .* signing secret is whsec_(ab){24} `)
		l2.next(fmt.Sprintf(`  --> order\.shipped \[%s\]  <-- \[401\] POST `, shipped[0].DeliveryID))
		got = rcv.WaitFor(5)
		rcv.Quiet(5, 500*time.Millisecond)
		if w := got[4]; w.Verified || w.ID != shipped[0].DeliveryID || !bytes.Equal(w.Body, shipped[0].Payload) {
			t.Fatalf("resumed webhook %+v", w)
		}
		if l2.interrupt() != shipped[0].Cursor {
			t.Fatal("second listen did not stop after the shipped event")
		}
	})
}

// The trigger route: a production app is refused before its body, an
// unknown or missing type is a validation error; neither appends anything.
func TestTriggerSandboxEventRefusals(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})
	sandbox := p.CreateApp("sandbox")
	prod := p.CreateAppWith(map[string]any{"name": "prod", "scopes": harness.AllScopes, "environment": "production"})
	n := p.EventCount()
	prod.Expect("POST", "/open/v1/webhooks/sandbox-events", map[string]any{"event": "order.shipped"}, http.StatusForbidden, "SANDBOX_ONLY")
	prod.Expect("POST", "/open/v1/webhooks/sandbox-events", "{", http.StatusForbidden, "SANDBOX_ONLY")
	for _, body := range []any{map[string]any{"event": "webhook.test"}, map[string]any{"event": "app.created"}, map[string]any{}, map[string]any{"event": 7}} {
		res := sandbox.Expect("POST", "/open/v1/webhooks/sandbox-events", body, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
		if len(res.Env.Errors["event"]) == 0 {
			t.Fatalf("%v: errors %v", body, res.Env.Errors)
		}
	}
	if got := p.EventCount(); got != n {
		t.Fatalf("refused triggers appended %d events", got-n)
	}
	res := sandbox.Expect("POST", "/open/v1/webhooks/sandbox-events", map[string]any{"event": "plugin.report.ready"}, http.StatusAccepted, "0")
	if !bytes.Contains(res.Env.Data, []byte(`"event":"plugin.report.ready"`)) {
		t.Fatalf("data %s", res.Env.Data)
	}
	if f := feedAfter(t, sandbox, "", 1); f[0].Event != "plugin.report.ready" {
		t.Fatalf("feed %+v", f)
	}
}

// countingProxy forwards every request to target and counts the GETs of
// path, the feed reads a client makes (the test's own reads go to the
// node directly).
func countingProxy(t *testing.T, target, path string) (url string, count func() int) {
	t.Helper()
	u, err := neturl.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0) // listen's read cut short by Ctrl-C is no failure
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == path {
			n.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() int { return int(n.Load()) }
}

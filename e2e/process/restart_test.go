package process

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/internal/proc"
)

type server struct {
	t    *testing.T
	cmd  *exec.Cmd
	base string
	dir  string
	log  bytes.Buffer
}

func startServer(t *testing.T, dir string, env ...string) *server {
	t.Helper()
	return launch(t, dir, "/readyz", env...)
}

// launch starts the binary and returns once probe answers 200.
func launch(t *testing.T, dir, probe string, env ...string) *server {
	t.Helper()
	addr := proc.FreeAddr(t)
	s := &server{t: t, base: "http://" + addr, dir: dir}
	// Built as this test binary is: under -race the detector watches the node too.
	s.cmd = exec.Command(proc.Binary(t, raceEnabled))
	s.cmd.Env = append(os.Environ(), "PLATFORM_ADDR="+addr, "PLATFORM_DATA_DIR="+dir,
		"PLATFORM_ESDB_URL=", "PLATFORM_EVENTSTORE_URL=", "PLATFORM_POSTGRES_URL=", "PLATFORM_ADMIN_TOKEN=")
	s.cmd.Env = append(s.cmd.Env, env...)
	s.cmd.Stdout, s.cmd.Stderr = &s.log, &s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.cmd.Process.Kill(); _ = s.cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if res, err := http.Get(s.base + probe); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return s
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("platform did not become ready; log:\n%s", s.log.String())
	return nil
}

func (s *server) kill() {
	_ = s.cmd.Process.Kill() // SIGKILL: no shutdown code runs
	_ = s.cmd.Wait()
}

func (s *server) adminToken() string {
	b, err := os.ReadFile(filepath.Join(s.dir, "admin.token"))
	if err != nil {
		s.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func (s *server) createApp() proc.Creds {
	req, _ := http.NewRequest("POST", s.base+"/admin/v1/apps", strings.NewReader(`{"name":"crash test"}`))
	req.Header.Set("Authorization", "Bearer "+s.adminToken())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	var env struct {
		Data proc.Creds `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&env); err != nil || res.StatusCode != http.StatusCreated {
		s.t.Fatalf("create app: %d %v", res.StatusCode, err)
	}
	return env.Data
}

func (s *server) signed(c proc.Creds, method, path, body string) (int, map[string]any, error) {
	ts, sig := proc.Stamp(c, method+" "+path, body)
	req, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
	req.Header.Set("X-App-Id", strconv.FormatInt(c.AppID, 10))
	req.Header.Set("X-Timestamp", ts)
	req.Header.Set("X-Signature", sig)
	client := http.Client{Timeout: 5 * time.Second}
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, nil, err
	}
	var env struct {
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return 0, nil, err
	}
	return res.StatusCode, env.Data, nil
}

// TestKill9KeepsEveryAcknowledgedWrite registers users from several clients,
// SIGKILLs the platform mid-stream, restarts it on the same data directory,
// and checks that every register that got a 2xx is there with its id.
func TestKill9KeepsEveryAcknowledgedWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the platform binary")
	}
	dir := t.TempDir()
	s := startServer(t, dir)
	app := s.createApp()

	var mu sync.Mutex
	acked := map[string]float64{}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				status, data, err := s.signed(app, "POST", "/open/v1/channel/users", `{"channel_user_id":"`+id+`","user":{"name":"n"}}`)
				if err != nil {
					return // the server died
				}
				if status == http.StatusCreated {
					mu.Lock()
					acked[id] = data["open_user_id"].(float64)
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(700 * time.Millisecond)
	s.kill()
	close(stop)
	wg.Wait()
	if len(acked) == 0 {
		t.Fatalf("no write was acknowledged before the kill; log:\n%s", s.log.String())
	}

	r := startServer(t, dir)
	for id, openUserID := range acked {
		status, data, err := r.signed(app, "GET", "/open/v1/channel/users/0?channel_user_id="+id, "")
		if err != nil || status != http.StatusOK {
			t.Fatalf("acknowledged user %s lost after kill -9: %d %v", id, status, err)
		}
		if got := data["user"].(map[string]any)["open_user_id"].(float64); got != openUserID {
			t.Fatalf("user %s has id %v after restart, %v before", id, got, openUserID)
		}
	}
	t.Logf("%d acknowledged registers all survived kill -9", len(acked))
}

// patchedUserWebhook creates an app whose webhook (url) takes
// user.profile.updated, registers a user and PATCHes it once: one delivery.
func (s *server) patchedUserWebhook(url string) {
	s.t.Helper()
	app := s.createApp()
	req, _ := http.NewRequest("PATCH", fmt.Sprintf("%s/admin/v1/apps/%d", s.base, app.AppID), strings.NewReader(`{"webhook_url":"`+url+`","webhook_events":["user.profile.updated"]}`))
	req.Header.Set("Authorization", "Bearer "+s.adminToken())
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 200 {
		s.t.Fatalf("configure webhook: %v %v", err, res)
	}
	status, data, err := s.signed(app, "POST", "/open/v1/channel/users", `{"channel_user_id":"k9","user":{"name":"n"}}`)
	if err != nil || status != 201 {
		s.t.Fatalf("register: %d %v", status, err)
	}
	id := int64(data["open_user_id"].(float64))
	if status, _, err := s.signed(app, "PATCH", fmt.Sprintf("/open/v1/channel/users/%d", id), `{"nickname":"x"}`); err != nil || status != 200 {
		s.t.Fatalf("patch: %d %v", status, err)
	}
}

// TestKill9MidRetryResumesTheSameDelivery: a webhook fails, the platform is
// SIGKILLed while the retry waits, and after restart the retry arrives with
// the same delivery id and byte-identical body, then succeeds once.
func TestKill9MidRetryResumesTheSameDelivery(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the platform binary")
	}
	type hit struct {
		id   string
		body string
	}
	hits := make(chan hit, 10)
	var mu sync.Mutex
	fail := true
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hits <- hit{r.Header.Get("X-Webhook-Id"), string(b)}
		mu.Lock()
		defer mu.Unlock()
		if fail {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer rcv.Close()
	env := []string{"PLATFORM_WEBHOOK_ALLOW_LOOPBACK=1", "PLATFORM_WEBHOOK_RETRY_SCHEDULE=2s,2s,2s,2s,2s"}
	dir := t.TempDir()
	s := startServer(t, dir, env...)
	s.patchedUserWebhook(rcv.URL)
	var first hit
	select {
	case first = <-hits:
	case <-time.After(10 * time.Second):
		t.Fatal("no first attempt")
	}
	s.kill() // the retry is due in 2 s; the process dies before it
	mu.Lock()
	fail = false
	mu.Unlock()
	startServer(t, dir, env...)
	select {
	case again := <-hits:
		if again.id != first.id || again.body != first.body {
			t.Fatalf("after kill -9 the retry changed:\n%+v\n%+v", again, first)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the retry never came after the restart")
	}
	select {
	case extra := <-hits:
		t.Fatalf("delivered again after success: %+v", extra)
	case <-time.After(3 * time.Second):
	}
}

// TestRestartReadsAcknowledgedWritesAtOnce: after kill -9 under load, the
// first reads of the restarted process (sent as soon as it listens, before
// it says ready) see the last acknowledged register and the last
// acknowledged nickname, restart after restart.
func TestRestartReadsAcknowledgedWritesAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the platform binary")
	}
	dir := t.TempDir()
	s := startServer(t, dir)
	app := s.createApp()
	status, data, err := s.signed(app, "POST", "/open/v1/channel/users", `{"channel_user_id":"nick","user":{"name":"n"}}`)
	if err != nil || status != http.StatusCreated {
		t.Fatalf("register: %d %v", status, err)
	}
	nickPath := fmt.Sprintf("/open/v1/channel/users/%d", int64(data["open_user_id"].(float64)))

	seq := 0
	for round := 0; round < 4; round++ {
		var mu sync.Mutex
		lastUser, lastNick := "", 0
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					id := fmt.Sprintf("r%d-w%d-%d", round, w, i)
					status, _, err := s.signed(app, "POST", "/open/v1/channel/users", `{"channel_user_id":"`+id+`","user":{"name":"n"}}`)
					if err != nil {
						return
					}
					if status == http.StatusCreated {
						mu.Lock()
						lastUser = id
						mu.Unlock()
					}
				}
			}()
		}
		wg.Add(1)
		go func() { // one writer, so its last acknowledged nickname is the truth
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				seq++
				status, _, err := s.signed(app, "PATCH", nickPath, fmt.Sprintf(`{"nickname":"n%d"}`, seq))
				if err != nil {
					return
				}
				if status == http.StatusOK {
					mu.Lock()
					lastNick = seq
					mu.Unlock()
				}
			}
		}()
		// The kill lands once both writers have had a write acknowledged
		// (a loaded machine may take longer than the load window to
		// answer the first), then after some more load.
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			mu.Lock()
			acked := lastUser != "" && lastNick != 0
			mu.Unlock()
			if acked {
				break
			}
		}
		time.Sleep(800 * time.Millisecond)
		s.kill()
		close(stop)
		wg.Wait()
		if lastUser == "" || lastNick == 0 {
			t.Fatalf("round %d: nothing acknowledged before the kill; log:\n%s", round, s.log.String())
		}

		s = launch(t, dir, "/healthz")
		status, _, err := s.signed(app, "GET", "/open/v1/channel/users/0?channel_user_id="+lastUser, "")
		if err != nil || status != http.StatusOK {
			t.Fatalf("round %d: the last acknowledged register %s read as %d %v right after the restart", round, lastUser, status, err)
		}
		status, data, err := s.signed(app, "GET", nickPath, "")
		if err != nil || status != http.StatusOK {
			t.Fatalf("round %d: snapshot %d %v", round, status, err)
		}
		got := data["user"].(map[string]any)["nickname"]
		// The PATCH in flight at the kill may have landed without its answer.
		if got != fmt.Sprintf("n%d", lastNick) && got != fmt.Sprintf("n%d", lastNick+1) {
			t.Fatalf("round %d: nickname %v right after the restart, last acknowledged n%d", round, got, lastNick)
		}
	}
}

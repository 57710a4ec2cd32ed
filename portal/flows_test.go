package portal_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/portal/portaltest"
)

type createdOperator struct {
	OperatorID int64  `json:"operator_id"`
	Token      string `json:"token"`
}

// admin calls the admin API with the bootstrap token.
func admin(p *portaltest.Platform, method, path string, body any) (int, json.RawMessage, error) {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, p.Srv.URL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+p.Node.AdminToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := p.Srv.Client().Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	raw, _ := io.ReadAll(res.Body)
	_ = json.Unmarshal(raw, &env)
	return res.StatusCode, env.Data, nil
}

func operatorsCreate(p *portaltest.Platform, name, role string) (createdOperator, error) {
	status, data, err := admin(p, "POST", "/admin/v1/operators", map[string]string{"name": name, "role": role})
	var op createdOperator
	if err == nil && status != http.StatusCreated {
		err = fmt.Errorf("create operator: %d %s", status, data)
	}
	if err == nil {
		err = json.Unmarshal(data, &op)
	}
	return op, err
}

func operatorsRevoke(p *portaltest.Platform, id int64) error {
	status, data, err := admin(p, "POST", fmt.Sprintf("/admin/v1/operators/%d/revoke", id), nil)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("revoke operator: %d %s", status, data)
	}
	return err
}

var resetLink = regexp.MustCompile(`https?://[^\s<"]+/portal/password/reset\?token=([^\s<"]+)`)

// resetTokens waits until the operator's outbox holds n reset links mailed
// to email (reset requests are mailed in the background, after the page
// answered) and returns them newest first.
func resetTokens(t *testing.T, op *portaltest.Browser, email string, n int) []string {
	t.Helper()
	var toks []string
	var box portaltest.Page
	for range 750 { // up to 15 s: the work runs after the page answered

		box = op.Get("/portal/ops/outbox")
		if box.Status != http.StatusOK || box.H1() != "Outbox" {
			t.Fatalf("outbox: %d %q", box.Status, box.H1())
		}
		toks = toks[:0]
		for _, row := range strings.Split(box.Body, "<tr id=\"mail-")[1:] { // newest first
			if !strings.Contains(row, email) {
				continue
			}
			if m := resetLink.FindStringSubmatch(html.UnescapeString(row)); m != nil {
				tok, _ := url.QueryUnescape(m[1])
				toks = append(toks, tok)
			}
		}
		if len(toks) >= n {
			return toks
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%d of %d reset links to %s in the outbox: %s", len(toks), n, email, box.Text())
	return nil
}

// resetToken waits for the newest reset link mailed to email.
func resetToken(t *testing.T, op *portaltest.Browser, email string) string {
	t.Helper()
	return resetTokens(t, op, email, 1)[0]
}

func TestPasswordResetThroughOutbox(t *testing.T) {
	configs(t, node.Config{}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		email := portaltest.Email(t, "Max")
		other, _ := p.Developer(email, false) // a session that the reset must end
		op := p.Operator()
		waitFor(t, "the welcome mail", func() bool {
			return strings.Contains(op.Get("/portal/ops/outbox").Text(), "Your developer portal account")
		})
		if got := op.Get("/portal/ops/outbox"); !strings.Contains(got.Text(), "No SMTP server is configured") || strings.Count(got.Body, "<tr id=\"mail-") != 1 {
			t.Fatalf("outbox with the welcome mail only: %s", got.Text())
		}

		mails := strings.Count(op.Get("/portal/ops/outbox").Body, "<tr id=\"mail-") // the welcome mail
		b := p.Browser()
		b.Get("/portal/password/forgot")
		nobody := portaltest.Email(t, "nobody")
		unknown := b.Post("/portal/password/forgot", url.Values{"email": {nobody}})
		known := b.Post("/portal/password/forgot", url.Values{"email": {strings.ToUpper(email)}})
		if known.Status != http.StatusOK || known.Text() != unknown.Text() || !strings.Contains(known.Text(), "If an account exists for that address") {
			t.Fatalf("forgot answers differ or are wrong:\n%d %s\n%d %s", known.Status, known.Text(), unknown.Status, unknown.Text())
		}
		// The work runs in order after the pages answered: once the known
		// address's mail is there, the unknown one's turn has passed.
		token := resetToken(t, op, email)
		if box := op.Get("/portal/ops/outbox").Body; strings.Count(box, "<tr id=\"mail-") != mails+1 || strings.Contains(box, nobody) {
			t.Fatal("the unknown address got mail too")
		}

		page := b.Get("/portal/password/reset?token=" + url.QueryEscape(token))
		if page.H1() != "Choose a new password" {
			t.Fatalf("reset page: %q", page.H1())
		}
		if got := b.Post("/portal/password/reset", url.Values{"token": {token}, "password": {"short"}}); got.Status != http.StatusBadRequest {
			t.Fatalf("short new password: %d", got.Status)
		}
		done := b.Post("/portal/password/reset", url.Values{"token": {token}, "password": {"a brand new passphrase"}})
		if done.Status != http.StatusSeeOther || done.Location() != "/portal/signin" {
			t.Fatalf("reset: %d %s", done.Status, done.Text())
		}
		// Single use.
		again := b.Post("/portal/password/reset", url.Values{"token": {token}, "password": {"yet another passphrase"}})
		if again.Status != http.StatusBadRequest || !strings.Contains(again.Text(), "invalid, used or expired") {
			t.Fatalf("second use of the token: %d %s", again.Status, again.Text())
		}
		// A forged token of the same account is refused.
		forged := token[:strings.IndexByte(token, '.')+1] + "AAAA"
		if got := b.Post("/portal/password/reset", url.Values{"token": {forged}, "password": {"yet another passphrase"}}); got.Status != http.StatusBadRequest {
			t.Fatalf("forged token: %d", got.Status)
		}
		// The old session is gone; the old password is refused; the new one works.
		if got := other.Get("/portal/"); got.H1() != "Developer portal" {
			t.Fatalf("a session from before the reset survived: %q", got.H1())
		}
		if got := b.SignIn(email, password); got.Status != http.StatusUnauthorized {
			t.Fatalf("old password: %d", got.Status)
		}
		if got := b.SignIn(email, "a brand new passphrase"); got.Status != http.StatusSeeOther {
			t.Fatalf("new password: %d %s", got.Status, got.Text())
		}
	})
}

func TestResetTokenExpires(t *testing.T) {
	c := &clock{now: time.Now()}
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir(), Now: c.Now})
	email := portaltest.Email(t, "Ned")
	p.Developer(email, false)
	b := p.Browser()
	b.Get("/portal/password/forgot")
	b.Post("/portal/password/forgot", url.Values{"email": {email}})
	token := resetToken(t, p.Operator(), email)
	c.Add(61 * time.Minute)
	if got := b.Post("/portal/password/reset", url.Values{"token": {token}, "password": {"a brand new passphrase"}}); got.Status != http.StatusBadRequest {
		t.Fatalf("expired token: %d %s", got.Status, got.Text())
	}
}

// smtpServer is a minimal SMTP server on loopback that records messages,
// or refuses every message with 451 while failing is set.
type smtpServer struct {
	ln      net.Listener
	mu      sync.Mutex
	got     []string
	failing bool
}

func newSMTPServer(t *testing.T) *smtpServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &smtpServer{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *smtpServer) setFailing(f bool) {
	s.mu.Lock()
	s.failing = f
	s.mu.Unlock()
}

func (s *smtpServer) messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

func (s *smtpServer) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	say := func(line string) { fmt.Fprintf(c, "%s\r\n", line) }
	say("220 test ESMTP")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
			say("250-test")
			say("250 8BITMIME")
		case strings.HasPrefix(cmd, "MAIL FROM"):
			s.mu.Lock()
			failing := s.failing
			s.mu.Unlock()
			if failing {
				say("451 try again later")
				continue
			}
			say("250 ok")
		case strings.HasPrefix(cmd, "RCPT TO"):
			say("250 ok")
		case cmd == "DATA":
			say("354 go ahead")
			var msg strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				msg.WriteString(strings.TrimPrefix(l, "."))
			}
			s.mu.Lock()
			s.got = append(s.got, msg.String())
			s.mu.Unlock()
			say("250 queued")
		case cmd == "QUIT":
			say("221 bye")
			return
		default:
			say("250 ok")
		}
	}
}

// waitFor polls cond a bounded number of times (up to 15 s).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 750 {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestPasswordResetThroughSMTP(t *testing.T) {
	srv := newSMTPServer(t)
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir(), Portal: node.PortalConfig{
		SMTPURL: "smtp://" + srv.ln.Addr().String(), MailFrom: "portal@example.com", MailPoll: 20 * time.Millisecond,
		MailRetries: []time.Duration{10 * time.Millisecond}, BaseURL: "https://open.example.com",
	}})
	email := portaltest.Email(t, "Oz")
	p.Developer(email, false)
	waitFor(t, "the welcome mail", func() bool { return len(srv.messages()) == 1 })
	if msg := srv.messages()[0]; !strings.Contains(msg, "Subject: Your developer portal account") || !strings.Contains(msg, "https://open.example.com/portal/signin") {
		t.Fatalf("welcome mail:\n%s", msg)
	}
	b := p.Browser()
	b.Get("/portal/password/forgot")

	// A refusing server: retried, then marked failed, visible in the outbox.
	srv.setFailing(true)
	b.Post("/portal/password/forgot", url.Values{"email": {email}})
	op := p.Operator()
	waitFor(t, "the failed mail in the outbox", func() bool {
		return strings.Contains(op.Get("/portal/ops/outbox").Text(), "failed (attempt 2: smtp: MAIL FROM: 451")
	})
	if got := op.Get("/portal/ops/outbox"); !strings.Contains(got.Text(), "Mail goes through the configured SMTP server") {
		t.Fatalf("outbox page: %s", got.Text())
	}

	srv.setFailing(false)
	b.Post("/portal/password/forgot", url.Values{"email": {email}})
	waitFor(t, "the reset mail", func() bool { return len(srv.messages()) == 2 })
	msg := srv.messages()[1]
	for _, want := range []string{"From: portal@example.com", "To: " + email, "Subject: Reset your developer portal password", "https://open.example.com/portal/password/reset?token="} {
		if !strings.Contains(msg, want) {
			t.Fatalf("mail lacks %q:\n%s", want, msg)
		}
	}
	waitFor(t, "the sent status", func() bool { return strings.Contains(op.Get("/portal/ops/outbox").Text(), " sent ") })
	tok, _ := url.QueryUnescape(resetLink.FindStringSubmatch(msg)[1])
	if got := b.Post("/portal/password/reset", url.Values{"token": {tok}, "password": {"a brand new passphrase"}}); got.Status != http.StatusSeeOther {
		t.Fatalf("reset with the mailed token: %d %s", got.Status, got.Text())
	}
	if got := b.SignIn(email, "a brand new passphrase"); got.Status != http.StatusSeeOther {
		t.Fatalf("sign-in with the new password: %d", got.Status)
	}
}

func TestAuditListsDeveloperActions(t *testing.T) {
	configs(t, node.Config{}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		b, id := p.Developer(portaltest.Email(t, "Pia"), false)
		b.Post("/portal/signout", nil)
		op := p.Operator()
		op.Post(fmt.Sprintf("/portal/ops/developers/%d/review", id), url.Values{"decision": {"approved"}, "reason": {"ok"}})
		actor := fmt.Sprintf("developer:%d", id)
		type fact struct {
			Actor    string   `json:"actor"`
			Action   string   `json:"action"`
			Subjects []string `json:"subjects"`
		}
		var facts []fact
		waitFor(t, "the audit facts", func() bool {
			status, data, err := admin(p, "GET", "/admin/v1/audit?subject=developer-"+itoa(id), nil)
			if err != nil || status != http.StatusOK {
				t.Fatalf("audit: %d %v", status, err)
			}
			var page struct {
				Facts []fact `json:"facts"`
			}
			_ = json.Unmarshal(data, &page)
			facts = page.Facts
			return len(facts) >= 4
		})
		var got []string
		for _, f := range facts {
			got = append(got, f.Actor+" "+f.Action)
			if len(f.Subjects) != 1 || f.Subjects[0] != "developer-"+itoa(id) {
				t.Errorf("fact subjects %v", f.Subjects)
			}
		}
		want := []string{actor + " developer.signed_up", actor + " developer.signed_in", actor + " developer.signed_out",
			"operator:bootstrap developer.reviewed"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("audit facts\n got %v\nwant %v", got, want)
		}
	})
}

// TestSessionValidOnAnotherNode: two nodes sharing Postgres (log and read
// models) and the master key; a session started on A is valid on B, and a
// sign-out on B ends it on A.
func TestSessionValidOnAnotherNode(t *testing.T) {
	db := pgtest.New(t)
	key := randomKey(t)
	cfg := func() node.Config {
		return node.Config{DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db, MasterKey: key, AdminToken: "adm_portal_cluster"}
	}
	a := portaltest.Start(t, cfg())
	b := portaltest.Start(t, cfg())
	email := portaltest.Email(t, "Quinn")
	onA, id := a.Developer(email, false)
	cookie := onA.Cookie("portal_session")
	onB := b.Browser()
	u, _ := url.Parse(b.Srv.URL + "/portal/")
	onB.Client.Jar.SetCookies(u, []*http.Cookie{{Name: cookie.Name, Value: cookie.Value, Path: "/portal/"}})
	if got := onB.Get("/portal/"); got.H1() != "Dashboard" || !strings.Contains(got.Text(), "Developer id "+itoa(id)) {
		t.Fatalf("node B with node A's cookie: %q %s", got.H1(), got.Text())
	}
	// The operator on B approves; the developer on A sees it at once.
	op := b.Operator()
	if got := op.Post("/portal/ops/developers/"+itoa(id)+"/review", url.Values{"decision": {"approved"}}); got.Status != http.StatusSeeOther {
		t.Fatalf("approve on B: %d %s", got.Status, got.Text())
	}
	if got := onA.Get("/portal/"); !strings.Contains(got.Text(), "Status: approved.") {
		t.Fatalf("node A after approval on B: %s", got.Text())
	}
	if got := onB.Post("/portal/signout", nil); got.Status != http.StatusSeeOther {
		t.Fatalf("sign-out on B: %d", got.Status)
	}
	if got := onA.Get("/portal/"); got.H1() != "Developer portal" {
		t.Fatalf("node A after sign-out on B: %q", got.H1())
	}
	// The email is unique across nodes too: node B opens no second account.
	other := b.Browser()
	other.Get("/portal/signup")
	if got := other.Post("/portal/signup", url.Values{"email": {email}, "password": {password}}); got.Status != http.StatusOK {
		t.Fatalf("same email on node B: %d", got.Status)
	}
	if _, _, err := b.Node.Portal.Developers.SignUp(context.Background(), email, password, ""); !errors.Is(err, domain.ErrEmailTaken) {
		t.Fatalf("same email on node B: %v", err)
	}
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// TestLogsCarryNoAccountSecrets runs sign-up, a failed sign-in, a reset
// whose mail fails over SMTP, and the reset itself with debug logs on, and
// looks for the passwords, the address and the reset token in them.
func TestLogsCarryNoAccountSecrets(t *testing.T) {
	srv := newSMTPServer(t)
	srv.setFailing(true)
	logs := &syncBuffer{}
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Portal: node.PortalConfig{SMTPURL: "smtp://" + srv.ln.Addr().String(), MailPoll: 20 * time.Millisecond, MailRetries: []time.Duration{}}})
	email := portaltest.Email(t, "Secretive")
	b, _ := p.Developer(email, false)
	b.Post("/portal/signout", nil)
	b.SignIn(email, "the wrong password")
	b.Get("/portal/password/forgot")
	b.Post("/portal/password/forgot", url.Values{"email": {email}})
	op := p.Operator()
	waitFor(t, "the failed mail", func() bool { return strings.Contains(op.Get("/portal/ops/outbox").Text(), "failed (attempt 1") })
	token := resetToken(t, op, email)
	b.Post("/portal/password/reset", url.Values{"token": {token}, "password": {"the new secret phrase"}})
	out := logs.String()
	if !strings.Contains(out, "mail not sent") {
		t.Fatalf("the failed mail was not logged at all:\n%s", out)
	}
	for _, secret := range []string{password, "the wrong password", "the new secret phrase", email, token, token[strings.IndexByte(token, '.')+1:], "argon2id"} {
		if strings.Contains(out, secret) {
			t.Errorf("logs contain %q", secret)
		}
	}
}

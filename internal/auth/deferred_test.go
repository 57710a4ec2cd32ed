package auth_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/projections/memory"
)

// lagging is a directory that follows a log: held is what this node has
// applied, head what the log holds (another node acknowledged it). A head
// read of its own (ByIDChecked, Confirm) or a confirmation at a head read
// by the caller's statement (ConfirmAt) brings held up to head.
type lagging struct {
	mu         sync.Mutex
	held, head map[int64]domain.App
	ownReads   int               // head reads of the directory's own
	confirmed  []events.Position // heads ConfirmAt was given
}

func (d *lagging) catchUp() { d.held = d.head }

func (d *lagging) ByID(id int64) (domain.App, bool) { a, ok, _ := d.ByIDChecked(id); return a, ok }
func (d *lagging) ByKey(string) (domain.App, bool)  { return domain.App{}, false }
func (d *lagging) ByKeyChecked(string) (domain.App, bool, error) {
	return domain.App{}, false, nil
}

func (d *lagging) ByIDChecked(id int64) (domain.App, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ownReads++
	d.catchUp()
	a, ok := d.held[id]
	return a, ok, nil
}

func (d *lagging) ByIDDeferred(id int64) (domain.App, bool, bool, error) {
	d.mu.Lock()
	a, ok := d.held[id]
	d.mu.Unlock()
	if ok {
		return a, true, false, nil
	}
	a, ok, err := d.ByIDChecked(id)
	return a, ok, true, err
}

func (d *lagging) ByIDHeld(id int64) (domain.App, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	a, ok := d.held[id]
	return a, ok
}

func (d *lagging) ConfirmAt(head events.Position, _ time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.confirmed = append(d.confirmed, head)
	d.catchUp()
	return nil
}

func (d *lagging) Confirm(time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ownReads++
	d.catchUp()
	return nil
}

func (d *lagging) counts() (own, atHead int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ownReads, len(d.confirmed)
}

// answerOf is the status and code the edge answers err with.
func answerOf(err error) (int, string) {
	if err == nil {
		return http.StatusOK, ""
	}
	w := httptest.NewRecorder()
	httpapi.Error(w, httptest.NewRequest(http.MethodGet, "/", nil), err)
	var env struct {
		Code any `json:"code"`
	}
	_ = json.Unmarshal(w.Body.Bytes(), &env)
	code, _ := env.Code.(string)
	return w.Code, code
}

func signedPatch(app domain.App, secret string, ts int64, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPatch, "/open/v1/channel/users/1", strings.NewReader(body))
	sec := strconv.FormatInt(ts, 10)
	r.Header.Set("X-App-Id", strconv.FormatInt(app.AppID, 10))
	r.Header.Set("X-Timestamp", sec)
	r.Header.Set("X-Signature", auth.SignM(app.AppKey, sec, secret, []byte(body)))
	return r
}

// A signed write authenticated with VerifyLaterAtHead sends no head read of
// its own when its app is known: the binding's statement reads the head,
// and CheckAt confirms the entry there. Changes another node acknowledged
// before the request arrived still decide it: a suspension, a rotated
// secret or a scope withdrawn refuse it at CheckAt (or at Check, which
// reads the head itself), and a request signed with a secret this node
// has not applied yet is not refused before the head was read.
func TestVerifyLaterAtHeadConfirmsTheAppAtTheStatementsHead(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	app := domain.App{AppID: 9, AppKey: "ak_d", AppSecret: "as_old", Scopes: []string{"channel_users"}}
	body := `{"nickname":"n"}`
	setup := func(head domain.App) (*lagging, auth.SchemeM) {
		d := &lagging{held: map[int64]domain.App{9: app}, head: map[int64]domain.App{9: head}}
		return d, auth.SchemeM{Apps: d, Now: func() time.Time { return now }, Bindings: memory.New()}
	}
	at := events.Position{Commit: 41, Prepare: 41}

	t.Run("unchanged", func(t *testing.T) {
		d, s := setup(app)
		got, pending, err := s.VerifyLaterAtHead(signedPatch(app, app.AppSecret, now.Unix(), body), []byte(body))
		if err != nil || got.AppID != 9 || pending == nil {
			t.Fatalf("VerifyLaterAtHead: %v %v %v", got.AppID, pending, err)
		}
		if own, _ := d.counts(); own != 0 {
			t.Fatalf("%d head reads of the directory's own before the binding's statement, want 0", own)
		}
		if err := pending.CheckAt(pending.Value, at, now); err != nil {
			t.Fatalf("CheckAt: %v", err)
		}
		if own, confirmed := d.counts(); own != 0 || confirmed != 1 || d.confirmed[0] != at {
			t.Fatalf("own head reads %d, confirmations at the statement's head %v; want 0 and [%v]", own, d.confirmed, at)
		}
		// Confirmed once: a later Check reads nothing more.
		if err := pending.Check(pending.Value); err != nil {
			t.Fatal(err)
		}
		if own, confirmed := d.counts(); own != 0 || confirmed != 1 {
			t.Fatalf("Check after CheckAt: %d own reads, %d confirmations", own, confirmed)
		}
	})

	suspended, noScope, rotated := app, app, app
	suspended.Suspended = true
	noScope.Scopes = nil
	rotated.AppSecret = "as_new"
	for _, c := range []struct {
		name   string
		head   domain.App
		status int
		code   string
	}{
		{"suspended on another node", suspended, http.StatusForbidden, "APP_SUSPENDED"},
		{"scope withdrawn on another node", noScope, http.StatusForbidden, "SCOPE_NOT_GRANTED"},
		{"secret rotated on another node", rotated, http.StatusUnauthorized, "HTTP_401"},
	} {
		for _, withHead := range []bool{true, false} {
			name := c.name + ", confirmed at the statement's head"
			if !withHead {
				name = c.name + ", confirmed by a head read of its own"
			}
			t.Run(name, func(t *testing.T) {
				_, s := setup(c.head)
				_, pending, err := s.VerifyLaterAtHead(signedPatch(app, app.AppSecret, now.Unix(), body), []byte(body))
				if err != nil || pending == nil {
					t.Fatalf("VerifyLaterAtHead on the entry held: %v", err)
				}
				if withHead {
					err = pending.CheckAt(pending.Value, at, now)
				} else {
					err = pending.Check(pending.Value)
				}
				if status, code := answerOf(err); status != c.status || code != c.code {
					t.Fatalf("confirmed: %v (%d %s), want %d %s", err, status, code, c.status, c.code)
				}
			})
		}
	}

	t.Run("signed with a secret this node has not applied", func(t *testing.T) {
		d, s := setup(rotated)
		got, pending, err := s.VerifyLaterAtHead(signedPatch(app, rotated.AppSecret, now.Unix(), body), []byte(body))
		if err != nil || got.AppID != 9 {
			t.Fatalf("a request signed with the secret another node rotated to: %v", err)
		}
		if own, _ := d.counts(); own != 1 {
			t.Fatalf("%d head reads of its own before deciding, want 1", own)
		}
		// Decided at the head already: CheckAt confirms nothing again.
		if err := pending.CheckAt(pending.Value, at, now); err != nil {
			t.Fatal(err)
		}
		if _, confirmed := d.counts(); confirmed != 0 {
			t.Fatalf("%d confirmations after a decision at the head, want 0", confirmed)
		}
	})

	t.Run("VerifyLater waits for the head first", func(t *testing.T) {
		d, s := setup(suspended)
		_, _, err := s.VerifyLater(signedPatch(app, app.AppSecret, now.Unix(), body), []byte(body))
		if _, code := answerOf(err); code != "APP_SUSPENDED" {
			t.Fatalf("VerifyLater: %v, want APP_SUSPENDED", err)
		}
		if own, _ := d.counts(); own != 1 {
			t.Fatalf("%d head reads of its own, want 1", own)
		}
	})
}

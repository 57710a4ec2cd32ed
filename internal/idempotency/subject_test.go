package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
	keyfiles "github.com/healthtech/partner-open-platform/internal/datakeys/files"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/idempotency"
	projmemory "github.com/healthtech/partner-open-platform/projections/memory"
)

// newKeyedFixture is a fixture with data keys for answers about users.
func newKeyedFixture(t *testing.T) (*fixture, *datakeys.Keys) {
	t.Helper()
	f := newFixture(t)
	backend, err := keyfiles.Open(filepath.Join(t.TempDir(), "keys"))
	if err != nil {
		t.Fatal(err)
	}
	return f, datakeys.New(backend, f.sealer)
}

// storedAnswers are the keyed answers the fixture's log recorded, in order.
func storedAnswers(t *testing.T, f *fixture) []string {
	recs, err := f.store.ReadAll(context.Background(), events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var sealed []string
	for _, r := range recs {
		if r.Type == "idempotency.completed" {
			sealed = append(sealed, string(r.Data))
		}
	}
	return sealed
}

// TestAnswerAboutAUserIsShreddedWithTheirKey: answers about a channel user
// (in the path, or the request's open_user_id) are sealed with the user's
// data key; once it is destroyed their replay is 404 USER_NOT_FOUND, marked
// replayed, the request does not run again, and an answer about no user
// still replays byte for byte.
func TestAnswerAboutAUserIsShreddedWithTheirKey(t *testing.T) {
	f, ks := newKeyedFixture(t)
	k := f.node()
	k.Keys = ks
	e := &effect{}
	inPath := send(k, 1, "PATCH", "/open/v1/channel/users/42", "k-path", `{"name":"李雷"}`, e.handler)
	inBody := send(k, 1, "POST", "/open/v1/reports", "k-body", `{"name":"李雷","open_user_id":43}`, e.handler)
	noUser := send(k, 1, "POST", "/open/v1/order/create", "k-none", `{"name":"李雷"}`, e.handler)
	for _, a := range []answer{inPath, inBody, noUser} {
		if a.status != 201 {
			t.Fatalf("first answer %+v", a)
		}
	}
	sealed := storedAnswers(t, f)
	if len(sealed) != 3 || !strings.Contains(sealed[0], `"sealed_body":"dk1:user-42~`) || !strings.Contains(sealed[1], `"sealed_body":"dk1:user-43~`) || !strings.Contains(sealed[2], `"sealed_body":"v1:`) {
		t.Fatalf("stored answers %v", sealed)
	}
	if again := send(k, 1, "PATCH", "/open/v1/channel/users/42", "k-path", `{"name":"李雷"}`, e.handler); again.body != inPath.body {
		t.Fatalf("replay before erasure %+v", again)
	}

	for _, s := range []string{"user-42", "user-43"} {
		if err := ks.Destroy(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	runs := e.runs.Load()
	for _, a := range []answer{
		send(k, 1, "PATCH", "/open/v1/channel/users/42", "k-path", `{"name":"李雷"}`, e.handler),
		send(k, 1, "POST", "/open/v1/reports", "k-body", `{"name":"李雷","open_user_id":43}`, e.handler),
	} {
		if a.status != 404 || code(t, a) != "USER_NOT_FOUND" || a.header.Get(idempotency.ReplayedHeader) != "true" || strings.Contains(a.body, "李雷") {
			t.Fatalf("replay after erasure %+v", a)
		}
	}
	if e.runs.Load() != runs {
		t.Fatal("a replay after erasure ran the request again")
	}
	if again := send(k, 1, "POST", "/open/v1/order/create", "k-none", `{"name":"李雷"}`, e.handler); again.body != noUser.body || again.status != 201 {
		t.Fatalf("an answer about no user after erasure %+v", again)
	}
	if a := send(k, 1, "PATCH", "/open/v1/channel/users/42", "k-path", `{"name":"x"}`, e.handler); code(t, a) != "IDEMPOTENCY_KEY_REUSED" {
		t.Fatalf("the key is no longer bound: %+v", a)
	}
}

// A signed write about a user records its answer sealed with the user's
// data key ("done", status, content type, then dk1:<key id>:<base64>), and
// every replay answers it byte for byte, whatever the answer's length (the
// sealing writes nonce and ciphertext into the record's own buffer, past
// the room of their base64). Once the key is destroyed the replay is 404.
func TestSignedAnswerAboutAUserReplaysByteForByte(t *testing.T) {
	f, ks := newKeyedFixture(t)
	store := &bindLog{SignedStore: projmemory.New()}
	for n := range 70 {
		name := strings.Repeat("李", n)
		h := func(w http.ResponseWriter, r *http.Request, begin func() error) {
			if begin() != nil {
				return
			}
			httpapi.OK(w, http.StatusCreated, map[string]any{"open_user_id": 100 + n, "name": name})
		}
		k := f.node()
		k.Keys = ks
		sig := fmt.Sprintf("sig-%d", n)
		first := sendSigned(k, store, sig, "/open/v1/channel/users", "", `{"name":"a"}`, h)
		if first.status != http.StatusCreated || !strings.Contains(first.body, name) {
			t.Fatalf("length %d: first answer %d %s", n, first.status, first.body)
		}
		done := store.binds[len(store.binds)-1].value
		want := fmt.Sprintf("done\n201\napplication/json; charset=utf-8\ndk1:user-%d~", 100+n)
		if !strings.HasPrefix(done, want) || strings.Contains(done, "李") {
			t.Fatalf("length %d: record %q, want it to start %q and hold no plain text", n, done, want)
		}
		k2 := f.node() // another node sharing the store and the keys
		k2.Keys = ks
		again := sendSigned(k2, store, sig, "/open/v1/channel/users", "", `{"name":"a"}`, h)
		if again.status != first.status || again.body != first.body || again.header.Get(idempotency.ReplayedHeader) != "true" {
			t.Fatalf("length %d: replay %d %q, want %d %q", n, again.status, again.body, first.status, first.body)
		}
	}
	if err := ks.Destroy(context.Background(), "user-105"); err != nil {
		t.Fatal(err)
	}
	k := f.node()
	k.Keys = ks
	if a := sendSigned(k, store, "sig-5", "/open/v1/channel/users", "", `{"name":"a"}`, nil); a.status != http.StatusNotFound || strings.Contains(a.body, "李") {
		t.Fatalf("replay after erasure %d %s", a.status, a.body)
	}
}

// A handler that names the user its answer is about (AnswerAbout) gets a
// success answer sealed with that user's data key though the answer, the
// path and the body name no user: a keyed write's stored answer, a signed
// write's record, the two nested (a signed write with an Idempotency-Key),
// and a promised answer recorded with its append. An error answer is not
// taken to be about that user: it is sealed with the master key, as an
// answer about no user is.
func TestAnswerAboutNamesTheUserOfAnAnswer(t *testing.T) {
	f, ks := newKeyedFixture(t)
	k := f.node()
	k.Keys = ks
	about := func(status int) idempotency.Handler {
		return func(w http.ResponseWriter, r *http.Request, begin func() error) {
			if begin() != nil {
				return
			}
			idempotency.AnswerAbout(w, 77)
			if status >= http.StatusBadRequest {
				httpapi.Error(w, r, domain.ErrNoRemainingQuota)
				return
			}
			httpapi.OK(w, status, map[string]any{"order_id": "T-1"})
		}
	}
	const forUser, forNone = "dk1:user-77~", "v1:"
	stored := func() []string { return storedAnswers(t, f) }
	done := func(store *bindLog) string {
		return store.binds[len(store.binds)-1].value
	}

	send(k, 1, "POST", "/open/v1/order/create", "k-ok", `{"name":"a"}`, about(http.StatusCreated))
	send(k, 1, "POST", "/open/v1/order/create", "k-refused", `{"name":"a"}`, about(http.StatusUnprocessableEntity))
	if s := stored(); len(s) != 2 || !strings.Contains(s[0], `"sealed_body":"`+forUser) || !strings.Contains(s[1], `"sealed_body":"`+forNone) {
		t.Fatalf("keyed answers stored as %v, want the success sealed for user-77 and the refusal with the master key", s)
	}

	signed := &bindLog{SignedStore: projmemory.New()}
	sendSigned(k, signed, "sig-ok", "/open/v1/order/create", "", `{"name":"a"}`, about(http.StatusCreated))
	if r := done(signed); !strings.HasPrefix(r, "done\n201\napplication/json; charset=utf-8\n"+forUser) {
		t.Fatalf("signed record %q, want it sealed for user-77", r)
	}
	sendSigned(k, signed, "sig-refused", "/open/v1/order/create", "", `{"name":"a"}`, about(http.StatusUnprocessableEntity))
	if r := done(signed); !strings.Contains(r, "\n"+forNone) {
		t.Fatalf("signed refusal's record %q, want it sealed with the master key", r)
	}
	sendSigned(k, signed, "sig-keyed", "/open/v1/order/create", "k-nested", `{"name":"a"}`, about(http.StatusCreated))
	if r, s := done(signed), stored(); !strings.Contains(r, "\n"+forUser) || len(s) != 3 || !strings.Contains(s[2], `"sealed_body":"`+forUser) {
		t.Fatalf("a keyed signed write's record %q and stored answer %v, want both sealed for user-77", r, s)
	}

	rides := &riding{SignedStore: &bindLog{SignedStore: projmemory.New()}}
	sendSigned(k, rides, "sig-promised", "/open/v1/order/create", "", `{"name":"a"}`, func(w http.ResponseWriter, r *http.Request, begin func() error) {
		if begin() != nil {
			return
		}
		idempotency.AnswerAbout(w, 77)
		rides.appendWith(idempotency.Promise(r.Context(), http.StatusCreated, "application/json", []byte(`{"order_id":"T-1"}`)))
		w.WriteHeader(http.StatusCreated)
	})
	if r := done(rides.SignedStore.(*bindLog)); rides.binds.Load() != 1 || !strings.Contains(r, "\n"+forUser) {
		t.Fatalf("promised record %q (%d with the append), want it sealed for user-77", r, rides.binds.Load())
	}
}

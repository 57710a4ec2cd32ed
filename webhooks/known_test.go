package webhooks

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
)

// countingStore counts the reads of each stream and, like the privacy
// layer, reads a created delivery's body as erased once its subject is.
type countingStore struct {
	events.Store
	reg    *events.Registry
	mu     sync.Mutex
	reads  map[string]int
	erased map[string]bool
}

func (s *countingStore) ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]events.Recorded, error) {
	s.mu.Lock()
	s.reads[stream]++
	s.mu.Unlock()
	recs, err := s.Store.ReadStream(ctx, stream, from, limit)
	for i, r := range recs {
		if r.Type != (catalog.DeliveryCreated{}).EventType() || s.Readable(ctx, createdSubject(strings.TrimPrefix(stream, "delivery-"), r.Data)) {
			continue
		}
		env, derr := s.reg.Decode(r)
		if derr != nil {
			return nil, derr
		}
		c := *env.Payload.(*catalog.DeliveryCreated)
		c.Body = ""
		if r.Data, derr = json.Marshal(c); derr != nil {
			return nil, derr
		}
		recs[i] = r
	}
	return recs, err
}

func (s *countingStore) AppendMulti(ctx context.Context, parts ...events.StreamAppend) ([]events.AppendResult, error) {
	return events.AppendMulti(ctx, s.Store, parts...)
}

// Readable is false once the test erased the subject.
func (s *countingStore) Readable(_ context.Context, subject string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.erased[subject]
}

func (s *countingStore) readsOf(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads[domain.DeliveryStream(id)]
}

func (s *countingStore) erase(subject string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.erased[subject] = true
}

// size is how many deliveries are known (kept or proposed).
func (s *knownSet) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// receiver answers each POST with the next status of its script (200
// once the script is spent) and keeps the delivery ids it was sent.
type receiver struct {
	mu       sync.Mutex
	statuses []int
	got      []string
	badSig   int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if Sign("secret", req.Header.Get("X-Webhook-Timestamp"), body) != req.Header.Get("X-Webhook-Signature") {
		r.badSig++
	}
	r.got = append(r.got, req.Header.Get("X-Webhook-Id"))
	status := http.StatusOK
	if len(r.statuses) > 0 {
		status, r.statuses = r.statuses[0], r.statuses[1:]
	}
	w.WriteHeader(status)
}

func (r *receiver) posts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

type knownFixture struct {
	d     *Dispatcher
	store *countingStore
	rcv   *receiver
	eps   *breakers
}

func newKnownFixture(t testing.TB, sole bool, statuses ...int) knownFixture {
	t.Helper()
	reg := events.NewRegistry()
	reg.MustRegister(1, catalog.DeliveryCreated{}, catalog.DeliveryAttempted{}, catalog.DeliveryResendRequested{}, catalog.UserErased{})
	store := &countingStore{Store: memory.New(), reg: reg, reads: map[string]int{}, erased: map[string]bool{}}
	rcv := &receiver{statuses: statuses}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	d := &Dispatcher{Store: store, Registry: reg, Apps: appDirectory{1: {AppID: 1, WebhookURL: srv.URL, WebhookSecret: "secret"}},
		Projected: newMoves(), AppsReady: newMoves(), Client: srv.Client(), Clock: SystemClock{},
		Schedule: []time.Duration{time.Millisecond}, Location: time.UTC, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Sole: sole}
	return knownFixture{d: d, store: store, rcv: rcv, eps: d.endpoints()}
}

// create records a delivery of app 1 about user 7 through the dispatcher.
func (f knownFixture) create(t testing.TB, id string) {
	t.Helper()
	c := catalog.DeliveryCreated{DeliveryID: id, AppID: 1, Event: "user.profile.updated", SourceStream: "user-7",
		Body: `{"delivery_id":"` + id + `","open_user_id":7}`, Deliver: true}
	if err := f.d.createOne(context.Background(), c, ""); err != nil {
		t.Fatal(err)
	}
}

// attempt runs one attempt of id as the sender does once it holds the claim.
func (f knownFixture) attempt(id string) {
	key := endpointKey{app: 1}
	app, _ := f.d.Apps.ByID(1)
	url := endpointURL(app, 0)
	f.eps.acquire(key, url, time.Now())
	f.d.attempt(context.Background(), f.eps, claimed{Claim: Claim{DeliveryID: id}, ep: key, url: url}, time.Now(), func() {}, func() {})
}

// outcomes lists the stream's events as type:outcome (attempts) or type.
func (f knownFixture) outcomes(t *testing.T, id string) []string {
	t.Helper()
	recs, err := f.store.Store.ReadStream(context.Background(), domain.DeliveryStream(id), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		env, err := f.d.Registry.Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		switch p := env.Payload.(type) {
		case *catalog.DeliveryAttempted:
			out = append(out, "attempt "+p.Outcome)
		case *catalog.DeliveryResendRequested:
			out = append(out, "resend")
		default:
			out = append(out, "created")
		}
	}
	return out
}

func equalStrings(a, b []string) bool {
	return strings.Join(a, "|") == strings.Join(b, "|")
}

// A sole dispatcher sends a delivery it created, retries it and sends it
// again after a resend without reading its stream before any of those
// POSTs; each outcome is recorded at the revision it follows, the receiver
// gets every POST signed. Without Sole, every attempt reads the stream.
func TestSoleSenderAttemptsWithoutReadingTheStream(t *testing.T) {
	for _, sole := range []bool{true, false} {
		f := newKnownFixture(t, sole, http.StatusServiceUnavailable)
		f.create(t, "d1")
		f.attempt("d1") // 503: retrying in a millisecond
		time.Sleep(5 * time.Millisecond)
		f.attempt("d1") // delivered
		attemptReads := f.store.readsOf("d1")
		if _, err := f.d.Resend(context.Background(), 0, "d1", "operator"); err != nil {
			t.Fatal(err)
		}
		resendReads := f.store.readsOf("d1") - attemptReads
		f.attempt("d1") // delivered again
		attemptReads += f.store.readsOf("d1") - attemptReads - resendReads

		want := []string{"created", "attempt retry", "attempt delivered", "resend", "attempt delivered"}
		if got := f.outcomes(t, "d1"); !equalStrings(got, want) {
			t.Fatalf("sole=%v: stream %v, want %v", sole, got, want)
		}
		if got := f.rcv.posts(); len(got) != 3 || f.rcv.badSig != 0 {
			t.Fatalf("sole=%v: receiver got %v (%d bad signatures), want d1 three times, signed", sole, got, f.rcv.badSig)
		}
		wantReads := 0
		if !sole {
			wantReads = 3
		}
		if attemptReads != wantReads || resendReads != 1 {
			t.Fatalf("sole=%v: attempts read the stream %d times and the resend %d, want %d and 1", sole, attemptReads, resendReads, wantReads)
		}
		if n := f.d.known.size(); n != 0 {
			t.Fatalf("sole=%v: %d deliveries still known once delivered, want none", sole, n)
		}
	}
}

// An append the dispatcher did not make (an operator's resend written by
// another process) lands between what it knows and its attempt: the
// attempt's outcome is not recorded over it, and the next attempt reads
// the stream and records its outcome after the resend.
func TestSoleSenderRecordsNoOutcomeOverAnAppendItDidNotKnow(t *testing.T) {
	f := newKnownFixture(t, true, http.StatusServiceUnavailable)
	f.create(t, "d1")
	f.attempt("d1") // retrying, known at version 2
	ev, err := f.d.Registry.Encode(catalog.DeliveryResendRequested{DeliveryID: "d1", RequestedBy: "elsewhere", At: time.Now().UTC()},
		events.Metadata{AppID: 1, Actor: "elsewhere", OccurredAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Store.Append(context.Background(), domain.DeliveryStream("d1"), events.AfterVersion(2), ev); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	reads := f.store.readsOf("d1")
	f.attempt("d1") // served from version 2: its outcome conflicts
	if got, want := f.outcomes(t, "d1"), []string{"created", "attempt retry", "resend"}; !equalStrings(got, want) {
		t.Fatalf("stream %v, want %v: no outcome recorded over the resend", got, want)
	}
	if _, ok := f.d.known.recall("d1"); ok {
		t.Fatal("the delivery is still known after its outcome conflicted")
	}
	f.attempt("d1")
	if got, want := f.outcomes(t, "d1"), []string{"created", "attempt retry", "resend", "attempt delivered"}; !equalStrings(got, want) {
		t.Fatalf("stream %v, want %v", got, want)
	}
	if n := f.store.readsOf("d1") - reads; n != 1 {
		t.Fatalf("the two attempts read the stream %d times, want once (the one after the conflict)", n)
	}
}

// Another node recorded an attempt of the delivery after this one last
// saw it: a dispatcher that is not Sole reads the stream before the POST,
// so it neither sends the delivered delivery again nor records anything.
func TestSenderOfSharedDeliveriesSendsNothingAnotherNodeDelivered(t *testing.T) {
	f := newKnownFixture(t, false)
	f.create(t, "d1")
	ev, err := f.d.Registry.Encode(catalog.DeliveryAttempted{DeliveryID: "d1", Attempt: 1, At: time.Now().UTC(), Outcome: domain.OutcomeDelivered},
		events.Metadata{AppID: 1, Actor: "dispatcher", OccurredAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Store.Append(context.Background(), domain.DeliveryStream("d1"), events.AfterVersion(1), ev); err != nil {
		t.Fatal(err)
	}
	f.attempt("d1")
	if got := f.rcv.posts(); len(got) != 0 {
		t.Fatalf("receiver got %v, want nothing: another node delivered it", got)
	}
	if got, want := f.outcomes(t, "d1"), []string{"created", "attempt delivered"}; !equalStrings(got, want) {
		t.Fatalf("stream %v, want %v", got, want)
	}
}

// The delivery's user is erased after the dispatcher created it: the
// attempt reads the stream (whose body now reads as erased) and sends
// nothing, as it does without Sole.
func TestSoleSenderSendsNoBodyOfAnErasedUser(t *testing.T) {
	f := newKnownFixture(t, true)
	f.create(t, "d1")
	f.store.erase("user-7")
	f.attempt("d1")
	if got := f.rcv.posts(); len(got) != 0 {
		t.Fatalf("receiver got %v, want nothing: the user was erased", got)
	}
	if got, want := f.outcomes(t, "d1"), []string{"created"}; !equalStrings(got, want) {
		t.Fatalf("stream %v, want %v", got, want)
	}
	if n := f.store.readsOf("d1"); n != 1 {
		t.Fatalf("the attempt read the stream %d times, want once", n)
	}
	if n := f.d.known.size(); n != 0 {
		t.Fatalf("%d deliveries still known after the erasure, want none (no plaintext of the erased user kept)", n)
	}
}

// The erasure of a user, as delivery creation sees it in the log, drops
// every body of theirs the sender kept, before any attempt.
func TestSoleSenderForgetsAnErasedUsersBodies(t *testing.T) {
	f := newKnownFixture(t, true)
	f.create(t, "d1")
	f.create(t, "d2")
	other := catalog.DeliveryCreated{DeliveryID: "d3", AppID: 1, Event: "user.profile.updated", SourceStream: "user-8",
		Body: `{"delivery_id":"d3","open_user_id":8}`, Deliver: true}
	if err := f.d.createOne(context.Background(), other, ""); err != nil {
		t.Fatal(err)
	}
	ev, err := f.d.Registry.Encode(catalog.UserErased{AppID: 1, OpenUserID: 7, Reason: "request", ErasedBy: "operator", ErasedAt: time.Now().UTC()},
		events.Metadata{AppID: 1, Actor: "operator", OccurredAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.store.Append(context.Background(), "user-7", events.Any(), ev)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := f.store.Store.ReadStream(context.Background(), "user-7", 0, 0)
	if err != nil || len(recs) != 1 || recs[0].Position != res.Position {
		t.Fatalf("read back %v, %v", recs, err)
	}
	if _, err := f.d.PrepareBatch(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"d1": false, "d2": false, "d3": true} {
		if _, ok := f.d.known.recall(id); ok != want {
			t.Fatalf("%s known %v after user 7's erasure, want %v", id, ok, want)
		}
	}
}

// A suspended app's delivery is not sent from what the dispatcher knows;
// it is once the app is resumed.
func TestSoleSenderHonoursASuspendedApp(t *testing.T) {
	f := newKnownFixture(t, true)
	f.create(t, "d1")
	apps := f.d.Apps.(appDirectory)
	app := apps[1]
	app.Suspended = true
	apps[1] = app
	f.attempt("d1")
	if got := f.rcv.posts(); len(got) != 0 {
		t.Fatalf("receiver got %v, want nothing while the app is suspended", got)
	}
	app.Suspended = false
	apps[1] = app
	f.attempt("d1")
	if got, want := f.outcomes(t, "d1"), []string{"created", "attempt delivered"}; !equalStrings(got, want) || len(f.rcv.posts()) != 1 {
		t.Fatalf("stream %v and %d POSTs after the resume, want %v and one", got, len(f.rcv.posts()), want)
	}
}

// Resends race failing attempts (one attempt at a time, as the claim
// allows), each retried at once: whatever the dispatcher knows of the delivery at the end is the state
// its stream holds, never an older one, and every recorded attempt
// follows the one before it.
//
// The first attempt is recorded before the races start: until then the
// delivery waits for its first attempt, where a resend records nothing
// (decideResend), and on a starved machine all twenty resends could load
// the stream before that attempt's outcome. From then on the first resend
// to load it finds it retrying (or already resent), so at least one
// resend is recorded whatever the scheduling.
func TestSoleKnownStateNeverStandsOverANewerOne(t *testing.T) {
	var script []int
	for range 40 {
		script = append(script, http.StatusServiceUnavailable)
	}
	f := newKnownFixture(t, true, script...)
	f.d.Schedule = make([]time.Duration, 100) // every failure retries at once
	f.create(t, "d1")
	f.attempt("d1")
	ctx := context.Background()
	var claim sync.Mutex
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			claim.Lock()
			defer claim.Unlock()
			f.attempt("d1")
		}()
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * time.Millisecond) // among the attempts
			if _, err := f.d.Resend(ctx, 0, "d1", "operator"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	stream, err := f.d.load(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	k, ok := f.d.known.recall("d1")
	if ok {
		known, held := *k.del, *stream
		if *known.created != *held.created {
			t.Fatalf("known created %+v, the stream holds %+v", *known.created, *held.created)
		}
		known.created, held.created = nil, nil
		known.nextAt, held.nextAt = known.nextAt.UTC().Round(time.Microsecond), held.nextAt.UTC().Round(time.Microsecond)
		if known != held {
			t.Fatalf("known %+v, the stream holds %+v", known, held)
		}
	}
	t.Logf("known at the end: %v (stream at version %d, %s)", ok, stream.version, stream.status)
	recs, err := f.store.Store.ReadStream(ctx, domain.DeliveryStream("d1"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	last, resends := 0, 0
	for _, r := range recs {
		env, err := f.d.Registry.Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := env.Payload.(*catalog.DeliveryResendRequested); ok {
			resends++
		}
		if p, ok := env.Payload.(*catalog.DeliveryAttempted); ok {
			if p.Attempt != last+1 {
				t.Fatalf("attempt %d recorded after attempt %d", p.Attempt, last)
			}
			last = p.Attempt
		}
	}
	if last == 0 || resends == 0 {
		t.Fatalf("%d attempts and %d resends recorded, want both among the races", last, resends)
	}
	t.Logf("%d attempts, %d resends, %d POSTs", last, resends, len(f.rcv.posts()))
}

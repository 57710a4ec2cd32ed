// Package idempotency makes partner writes safe to retry: a request that
// carries an Idempotency-Key runs at most once per (app, key), and every
// retry with the same key and the same request gets the first answer again,
// byte for byte.
//
// The records live in the event store itself, one stream per (app, key)
// (domain.IdempotencyStream), because it is the one durable store that every
// deployment has and that every node shares: a claim appended with an
// expected revision is unique cluster-wide on every adapter, survives
// restarts, and an auditor can read it like any other history.
//
// A stream holds generations, each opened by idempotency.claimed and closed by
// idempotency.completed (the stored answer) or idempotency.released (the
// request ended with a 5xx or a concurrency conflict, so a retry may run it
// again). A generation is current for TTL after its claim; later, the key may
// be used anew. A claim that neither completed nor released within Lease (its
// node died mid-request) may be taken over.
package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// Header names, as Stripe spells them, so partners' client libraries work unchanged.
const (
	// Header is the request header carrying the partner's key.
	Header = "Idempotency-Key"
	// ReplayedHeader marks an answer replayed from the key's record rather than produced anew.
	ReplayedHeader = "Idempotent-Replayed"
	// MaxKeyLength bounds a key: long enough for any UUID or composite key, short enough to bound work.
	MaxKeyLength = 255
)

// Defaults of a Keeper's durations, documented in the OpenAPI file.
const (
	// DefaultTTL is how long a key's answer is replayed (and its body kept to itself).
	DefaultTTL = 24 * time.Hour
	// DefaultLease is how long an unfinished claim blocks the key; past it the
	// claim's node is presumed dead and a retry runs the request again. It
	// must exceed Budget plus the time to record the answer.
	DefaultLease = 2 * time.Minute
	// DefaultWait bounds how long a retry waits for a concurrent request with its key before 409.
	DefaultWait = 5 * time.Second
	// DefaultBudget bounds a keyed request's own work once it has claimed the key.
	DefaultBudget = 30 * time.Second
)

// Sealer encrypts stored answers with the master key (internal/secrets implements it).
type Sealer interface {
	Seal(plain string) (string, error)
	Open(sealed string) (string, error)
}

// Keeper serves keyed requests; one per node, all of them sharing the event store.
type Keeper struct {
	Store    events.Store
	Registry *events.Registry
	Sealer   Sealer
	// Keys, when set, seals each answer about a channel user with the user's
	// data key instead of the master key (see SubjectKeys): after the user
	// is erased, a replay answers 404 USER_NOT_FOUND, never their data.
	Keys SubjectKeys
	// Now is the clock of claims and expiry (tests inject one); nil: time.Now.
	Now func() time.Time
	// TTL, Lease, Wait and Budget default to the Default* constants when zero.
	TTL, Lease, Wait, Budget time.Duration
	// Replayed is told the log position of a replayed answer's record, which
	// lies after the original write, so that the app's next read on this node
	// waits for it (read your writes holds for replays on any node).
	Replayed func(appID int64, pos events.Position)
}

// Handler is the request's own work. It writes its answer to w, and calls
// begin once its input is validated and before it changes anything: begin
// claims the key (so bad input appends nothing) and returns ErrAnswered when
// the request must not run after all (another request holds or answered the
// key); the handler then returns at once, and whatever it writes is dropped.
type Handler func(w http.ResponseWriter, r *http.Request, begin func() error)

// ErrAnswered tells a handler that begin already settled the answer.
var ErrAnswered = errors.New("idempotency: answered from the key's record")

func (k *Keeper) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// KeyHash is the hex SHA-256 of a key, the part of its stream name that names it.
func KeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// checkKey applies the key rules: 1 to MaxKeyLength printable ASCII characters, sent once.
func checkKey(r *http.Request) (string, bool, error) {
	vals := r.Header.Values(Header)
	if len(vals) == 0 {
		return "", false, nil
	}
	bad := func(msg string) error {
		v := &domain.ValidationError{}
		v.Add(Header, msg)
		return v
	}
	if len(vals) > 1 {
		return "", true, bad("send the header once")
	}
	key := vals[0]
	if key == "" || len(key) > MaxKeyLength {
		return "", true, bad("must be 1 to 255 characters")
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return "", true, bad("must be printable ASCII (0x20-0x7E)")
		}
	}
	return key, true, nil
}

// fingerprint is what a key is bound to: the same key with another
// fingerprint is IDEMPOTENCY_KEY_REUSED.
type fingerprint struct{ method, path, body string }

func fingerprintOf(r *http.Request, body []byte) fingerprint {
	sum := sha256.Sum256(body)
	path := r.URL.Path
	if r.URL.RawQuery != "" {
		path += "?" + r.URL.RawQuery
	}
	return fingerprint{method: r.Method, path: path, body: hex.EncodeToString(sum[:])}
}

// record is the current generation of a key's stream.
type record struct {
	count     uint64 // events in the stream: the next append expects Exact(count-1)
	claim     *catalog.IdempotencyClaimed
	completed *catalog.IdempotencyCompleted
	at        events.Position // position of the completion, for read your writes
	released  bool
}

func (k *Keeper) load(ctx context.Context, stream string) (record, error) {
	recs, err := k.Store.ReadStream(ctx, stream, 0, 0)
	if err != nil {
		return record{}, err
	}
	var rec record
	rec.count = uint64(len(recs))
	for _, r := range recs {
		env, err := k.Registry.Decode(r)
		if err != nil {
			return record{}, fmt.Errorf("idempotency record %s: %w", stream, err)
		}
		switch p := env.Payload.(type) {
		case *catalog.IdempotencyClaimed:
			rec.claim, rec.completed, rec.released = p, nil, false
		case *catalog.IdempotencyCompleted:
			rec.completed, rec.at = p, r.Position
		case *catalog.IdempotencyReleased:
			rec.released = true
		}
	}
	return rec, nil
}

// state is what a record means for a request arriving now.
type state int

const (
	free       state = iota // no live generation: claim it
	replay                  // answered for this request: replay it
	reused                  // held or answered for another request
	inProgress              // held by a live request with this fingerprint
)

func (k *Keeper) decide(rec record, fp fingerprint, now time.Time) state {
	c := rec.claim
	if c == nil || rec.released || !now.Before(c.ClaimedAt.Add(or(k.TTL, DefaultTTL))) {
		return free
	}
	if rec.completed == nil && !now.Before(c.ClaimedAt.Add(or(k.Lease, DefaultLease))) {
		return free // the claiming node died before it answered
	}
	if c.Method != fp.method || c.Path != fp.path || c.BodySHA256 != fp.body {
		return reused
	}
	if rec.completed == nil {
		return inProgress
	}
	return replay
}

// expect is the expected revision of the next append to a stream holding count events.
func expect(count uint64) events.ExpectedRevision {
	if count == 0 {
		return events.NoStream()
	}
	return events.Exact(count - 1)
}

// keyed is one request under a key.
type keyed struct {
	k      *Keeper
	appID  int64
	stream string
	fp     fingerprint
	meta   events.Metadata
	// subject is the channel user the answer is about ("" for none), known
	// once the request ran.
	subject string

	rec     record // last loaded record
	claimed bool   // this request holds the key at revision claimRev
	claimAt uint64
	outcome error // set when the answer comes from the record (replay or refusal)
}

// settle waits while another request with the key is in progress, and
// returns the state the request ends up in (free, replay or reused), or
// ErrIdempotencyKeyInProgress after Wait.
func (q *keyed) settle(ctx context.Context) (state, error) {
	deadline := time.Now().Add(or(q.k.Wait, DefaultWait))
	pause := 10 * time.Millisecond
	for {
		s := q.k.decide(q.rec, q.fp, q.k.now())
		if s != inProgress {
			return s, nil
		}
		if time.Now().Add(pause).After(deadline) {
			return inProgress, domain.ErrIdempotencyKeyInProgress
		}
		select {
		case <-ctx.Done():
			return inProgress, ctx.Err()
		case <-time.After(pause):
		}
		pause = min(pause*2, 200*time.Millisecond)
		rec, err := q.k.load(ctx, q.stream)
		if err != nil {
			return inProgress, err
		}
		q.rec = rec
	}
}

// claim appends the claim; on a conflict it reloads and settles again.
func (q *keyed) claim(ctx context.Context) (state, error) {
	for range 10 {
		ev, err := q.k.Registry.Encode(catalog.IdempotencyClaimed{
			AppID: q.appID, Method: q.fp.method, Path: q.fp.path, BodySHA256: q.fp.body, ClaimedAt: q.k.now().UTC(),
		}, q.meta)
		if err != nil {
			return free, err
		}
		res, err := q.k.Store.Append(ctx, q.stream, expect(q.rec.count), ev)
		if err == nil {
			q.claimed, q.claimAt = true, res.Revision
			return free, nil
		}
		if !events.IsConflict(err) {
			return free, err
		}
		if q.rec, err = q.k.load(ctx, q.stream); err != nil {
			return free, err
		}
		s, err := q.settle(ctx)
		if err != nil || s != free {
			return s, err
		}
	}
	return free, domain.ErrContention
}

// Serve runs h for an authenticated request of app appID whose body was
// already read. Without an Idempotency-Key header it simply runs h. With one,
// it answers from the key's record when there is one for this request, refuses
// a key held for another request, and otherwise runs h, records its answer
// once h has claimed the key, and only then sends the answer.
func (k *Keeper) Serve(w http.ResponseWriter, r *http.Request, appID int64, body []byte, h Handler) {
	key, present, err := checkKey(r)
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	if !present {
		h(w, r, func() error { return nil })
		return
	}
	q := &keyed{
		k: k, appID: appID, stream: domain.IdempotencyStream(appID, KeyHash(key)), fp: fingerprintOf(r, body),
		meta: events.Metadata{AppID: appID, Actor: "app:" + strconv.FormatInt(appID, 10), RequestID: w.Header().Get(httpapi.RequestIDHeader)},
	}
	// Once it may have claimed the key, the request finishes and records its
	// answer even if the client hangs up: the client's retry then finds it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), or(k.Budget, DefaultBudget))
	defer cancel()
	r = r.WithContext(ctx)
	if q.rec, err = k.load(ctx, q.stream); err != nil {
		httpapi.Error(w, r, err)
		return
	}
	if s, err := q.settle(ctx); err != nil || s != free {
		q.answer(w, r, s, err)
		return
	}
	rw := recorderFor(w)
	h(rw, r, func() error {
		if q.claimed || q.outcome != nil {
			return q.outcome
		}
		s, err := q.claim(ctx)
		if err != nil || s != free {
			q.outcome = ErrAnswered
			q.answer(w, r, s, err)
			return ErrAnswered
		}
		return nil
	})
	if q.outcome != nil {
		return // answered from the record inside begin
	}
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	if q.claimed {
		q.subject = answerSubject(r, body, rw.body.Bytes())
		// A request that used up its budget still records its answer.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := q.finish(fctx, rw); err != nil {
			// The request's effect happened: answer it anyway. The claim
			// stays unfinished, so a retry after Lease runs the request again.
			httpapi.Logger(ctx).Error("idempotency: recording the answer failed", "stream", q.stream, "err", err)
		}
	}
	rw.flush(w, r)
}

// answer writes the outcome of a key that was not this request's to run.
func (q *keyed) answer(w http.ResponseWriter, r *http.Request, s state, err error) {
	switch {
	case errors.Is(err, domain.ErrIdempotencyKeyInProgress):
		w.Header().Set("Retry-After", "1")
		httpapi.Error(w, r, err)
	case err != nil:
		httpapi.Error(w, r, err)
	case s == reused:
		httpapi.Error(w, r, domain.ErrIdempotencyKeyReused)
	case s == replay:
		if err := q.replay(w, r); err != nil {
			httpapi.Error(w, r, err)
		}
	}
}

// replay writes the stored answer byte for byte and makes the app's next
// read on this node wait for the original write.
func (q *keyed) replay(w http.ResponseWriter, r *http.Request) error {
	c := q.rec.completed
	return q.k.writeReplay(w, r, q.stream, c.SealedBody, c.Status, c.ContentType, func() {
		if q.k.Replayed != nil {
			q.k.Replayed(q.appID, q.rec.at)
		}
	})
}

// writeReplay writes a recorded answer, marked replayed: the sealed body
// opened with the key of the person it is about, its status and content
// type. An answer about a user erased since is shredded with their key, and
// the request's resource is gone, as it now is for every other request:
// 404. opened (optional) runs once the answer is known to be written.
func (k *Keeper) writeReplay(w http.ResponseWriter, r *http.Request, stream, sealed string, status int, contentType string, opened func()) error {
	body, err := k.openAnswer(r.Context(), stream, sealed)
	if errors.Is(err, errErased) {
		w.Header().Set(ReplayedHeader, "true")
		httpapi.Error(w, r, domain.ErrUserNotFound)
		return nil
	}
	if err != nil {
		return fmt.Errorf("idempotency: open the stored answer of %s: %w", stream, err)
	}
	if opened != nil {
		opened()
	}
	if contentType != "" {
		w.Header().Set("Content-Type", contentType)
	}
	w.Header().Set(ReplayedHeader, "true")
	// Some answers carry a secret (a secret rotation): a replay is never
	// stored by intermediaries either.
	w.Header().Set("Cache-Control", "no-store")
	noteCode(r, []byte(body))
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
	return nil
}

// stored reports whether an answer is kept for replay: everything but 5xx
// and concurrency conflicts, whose retry may well succeed.
func stored(status int, code string) bool {
	return status < 500 && code != "CONCURRENT_MODIFICATION" && code != "IDEMPOTENCY_KEY_IN_PROGRESS"
}

// finish appends the answer (or the release) right after the claim.
func (q *keyed) finish(ctx context.Context, rw *recorder) error {
	code := envelopeCode(rw.body.Bytes())
	now := q.k.now().UTC()
	var p events.Payload
	if stored(rw.status, code) {
		sealed, err := q.k.sealAnswer(ctx, q.stream, q.subject, rw.body.String())
		if err != nil {
			return err
		}
		p = catalog.IdempotencyCompleted{AppID: q.appID, Status: rw.status, ContentType: rw.header.Get("Content-Type"), SealedBody: sealed, CompletedAt: now}
	} else {
		p = catalog.IdempotencyReleased{AppID: q.appID, Status: rw.status, Code: code, ReleasedAt: now}
	}
	ev, err := q.k.Registry.Encode(p, q.meta)
	if err != nil {
		return err
	}
	_, err = q.k.Store.Append(ctx, q.stream, events.Exact(q.claimAt), ev)
	return err
}

// envelopeCode is the string code of an error envelope ("" on success).
func envelopeCode(body []byte) string {
	var env struct {
		Code any `json:"code"`
	}
	if json.Unmarshal(body, &env) != nil {
		return ""
	}
	s, _ := env.Code.(string)
	return s
}

// noteCode hands an answer's error code to the access log, which the
// recorder cannot do through httpapi's writer hook.
func noteCode(r *http.Request, body []byte) {
	if c := envelopeCode(body); c != "" {
		httpapi.NoteFrom(r.Context()).Code = c
	}
}

// Package idempotency is the HTTP adapter of idempotency keys: a request
// that carries an Idempotency-Key runs at most once per (app, key), and
// every retry with the same key and the same request gets the first answer
// again, byte for byte. What a key's record means and what it records are
// decided on the write side (commands.IdempotencyKeys, one stream per
// (app, key)); this package reads the header, waits while another request
// holds the key, records the answer (sealed) and replays it. Signed writes
// keep their records in the nonce store instead (signed.go).
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
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
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
	DefaultTTL = commands.DefaultKeyTTL
	// DefaultLease is how long an unfinished claim blocks the key; past it the
	// claim's node is presumed dead and a retry runs the request again. It
	// must exceed Budget plus the time to record the answer.
	DefaultLease = commands.DefaultKeyLease
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

	once sync.Once
	keys *commands.IdempotencyKeys
}

// records is the write side of the keys, over the Keeper's store.
func (k *Keeper) records() *commands.IdempotencyKeys {
	k.once.Do(func() { k.keys = commands.NewIdempotencyKeys(k.Store, k.Registry, k.TTL, k.Lease) })
	return k.keys
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

// fingerprintOf is what a key is bound to: the same key with another
// fingerprint is IDEMPOTENCY_KEY_REUSED.
func fingerprintOf(r *http.Request, body []byte) commands.KeyRequest {
	sum := sha256.Sum256(body)
	path := r.URL.Path
	if r.URL.RawQuery != "" {
		path += "?" + r.URL.RawQuery
	}
	return commands.KeyRequest{Method: r.Method, Path: path, BodySHA256: hex.EncodeToString(sum[:])}
}

// keyed is one request under a key.
type keyed struct {
	k      *Keeper
	appID  int64
	hash   string // the key's hash
	stream string
	fp     commands.KeyRequest
	meta   commands.Meta
	// subject is the channel user the answer is about ("" for none), known
	// once the request ran.
	subject string

	rec     commands.KeyRecord // last decided record
	claimed bool               // this request holds the key (rec is its claim's)
	outcome error              // set when the answer comes from the record (replay or refusal)
}

// settle waits while another request with the key is in progress, and
// returns the state the request ends up in (free, replay or reused), or
// ErrIdempotencyKeyInProgress after Wait.
func (q *keyed) settle(ctx context.Context, s commands.KeyStatus) (commands.KeyStatus, error) {
	deadline := time.Now().Add(or(q.k.Wait, DefaultWait))
	pause := 10 * time.Millisecond
	for s == commands.KeyInProgress {
		if time.Now().Add(pause).After(deadline) {
			return s, domain.ErrIdempotencyKeyInProgress
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(pause):
		}
		pause = min(pause*2, 200*time.Millisecond)
		var err error
		if q.rec, s, err = q.k.records().Look(ctx, q.appID, q.hash, q.fp, q.k.now()); err != nil {
			return s, err
		}
	}
	return s, nil
}

// claim claims the key (decided on the record settle left, and again on
// the stream when another request wrote it first); a key it finds held
// settles again.
func (q *keyed) claim(ctx context.Context) (commands.KeyStatus, error) {
	for range 10 {
		rec, s, err := q.k.records().Claim(ctx, q.rec, q.appID, q.hash, q.fp, q.k.now(), q.meta)
		if err != nil {
			return s, err
		}
		q.rec = rec
		if s == commands.KeyFree {
			q.claimed = true
			return s, nil
		}
		if s, err = q.settle(ctx, s); err != nil || s != commands.KeyFree {
			return s, err
		}
	}
	return commands.KeyFree, domain.ErrContention
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
	hash := KeyHash(key)
	q := &keyed{
		k: k, appID: appID, hash: hash, stream: domain.IdempotencyStream(appID, hash), fp: fingerprintOf(r, body),
		meta: commands.Meta{AppID: appID, Actor: "app:" + strconv.FormatInt(appID, 10), RequestID: w.Header().Get(httpapi.RequestIDHeader)},
	}
	// Once it may have claimed the key, the request finishes and records its
	// answer even if the client hangs up: the client's retry then finds it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), or(k.Budget, DefaultBudget))
	defer cancel()
	r = r.WithContext(ctx)
	rec, s, err := k.records().Look(ctx, appID, hash, q.fp, k.now())
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	q.rec = rec
	if s, err := q.settle(ctx, s); err != nil || s != commands.KeyFree {
		q.answer(w, r, s, err)
		return
	}
	rw := recorderFor(w)
	h(rw, r, func() error {
		if q.claimed || q.outcome != nil {
			return q.outcome
		}
		s, err := q.claim(ctx)
		if err != nil || s != commands.KeyFree {
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
		q.subject = rw.subject(r, body, rw.status, rw.body.Bytes())
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
func (q *keyed) answer(w http.ResponseWriter, r *http.Request, s commands.KeyStatus, err error) {
	switch {
	case errors.Is(err, domain.ErrIdempotencyKeyInProgress):
		w.Header().Set("Retry-After", "1")
		httpapi.Error(w, r, err)
	case err != nil:
		httpapi.Error(w, r, err)
	case s == commands.KeyReused:
		httpapi.Error(w, r, domain.ErrIdempotencyKeyReused)
	case s == commands.KeyReplay:
		if err := q.replay(w, r); err != nil {
			httpapi.Error(w, r, err)
		}
	}
}

// replay writes the stored answer byte for byte and makes the app's next
// read on this node wait for the original write.
func (q *keyed) replay(w http.ResponseWriter, r *http.Request) error {
	c, at := q.rec.Answer()
	return q.k.writeReplay(w, r, q.stream, c.SealedBody, c.Status, c.ContentType, func() {
		if q.k.Replayed != nil {
			q.k.Replayed(q.appID, at)
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
	noteCode(r, status, []byte(body))
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
	return nil
}

// finish records the answer (or the release) right after the claim.
func (q *keyed) finish(ctx context.Context, rw *recorder) error {
	a := commands.KeyAnswer{Status: rw.status, Code: envelopeCode(rw.status, rw.body.Bytes()), ContentType: rw.header.Get("Content-Type")}
	if commands.KeptForReplay(a.Status, a.Code) {
		sealed, err := q.k.sealAnswer(ctx, q.stream, q.subject, rw.body.Bytes())
		if err != nil {
			return err
		}
		a.SealedBody = sealed
	}
	return q.k.records().Finish(ctx, q.rec, q.appID, q.hash, a, q.k.now(), q.meta)
}

// envelopeCode is the string code of an error envelope ("" on success).
// Only an error status carries one (a success envelope's code is 0), so a
// success body, which may be large, is not parsed.
func envelopeCode(status int, body []byte) string {
	if status < http.StatusBadRequest {
		return ""
	}
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
func noteCode(r *http.Request, status int, body []byte) {
	if c := envelopeCode(status, body); c != "" {
		httpapi.NoteFrom(r.Context()).Code = c
	}
}

package idempotency

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/nonces"
)

// SignedStore keeps the records of signed writes: the nonce and binding
// store the nodes share (nonces.Store), whose entries expire on
// their own. Bind's first value holds; Use is a test-and-set.
type SignedStore interface {
	Use(ctx context.Context, scope, nonce string, expires time.Time) (bool, error)
	Bind(ctx context.Context, scope, key, value string, expires time.Time) (existing string, fresh bool, err error)
}

// RouteClaimer is a SignedStore that records a scheme M signature's route
// binding and claims the signed write in one statement, one transaction
// where they were two (projections/postgres). It binds the claim only when
// the route binding accepts routeName outright (its own fresh row, or the
// same route), so a request the binding refuses leaves no claim: bound is
// the route binding's value as Bind answers it, claimed whether the claim
// was bound, and fresh whether the claim is the caller's own.
type RouteClaimer interface {
	BindRouteAndClaim(ctx context.Context, route, claim nonces.Binding, routeName string) (bound string, claimed, fresh bool, err error)
}

// HeadRouteClaimer is a RouteClaimer whose statement also reads the event
// log's head when the log shares its database (projections/postgres), so
// that a request whose app authentication has yet to confirm current
// (HeadCheckedRoute) is confirmed at that head, with no head read of its
// own.
type HeadRouteClaimer interface {
	BindRouteAndClaimAtHead(ctx context.Context, route, claim nonces.Binding, routeName string) (RouteClaim, error)
}

// RouteClaim is what a HeadRouteClaimer's statement answers
// (nonces.RouteClaim).
type RouteClaim = nonces.RouteClaim

// HeadCheckedRoute is a PendingRoute whose authentication may have left
// its app's entry to confirm current (auth.PendingBinding of
// VerifyLaterAtHead): CheckAt confirms it at head, read by a statement
// sent at sent, judges the request again, then judges the route as Check
// does. Check alone confirms with a head read of its own.
type HeadCheckedRoute interface {
	CheckAt(bound string, head events.Position, sent time.Time) error
}

// PendingRoute is a scheme M signature's route binding that
// authentication left for the write edge to record
// (auth.PendingBinding): ServeSigned records it with the write's
// claim when the store is a RouteClaimer.
type PendingRoute interface {
	Binding() nonces.Binding
	Route() string
	// Check judges the value the binding's key holds once recorded.
	Check(bound string) error
	// Record records the binding on its own and checks it.
	Record() error
}

// SignatureTTL is how long a signed write's record answers its replays. A
// scheme M timestamp is accepted within ±300 s of the server clock, so a
// signature first used at its timestamp − 300 s can be presented until its
// timestamp + 300 s; one more minute covers the nodes' clock differences.
const SignatureTTL = 2*300*time.Second + time.Minute

// signedScope is the store scope of signed-write records.
const signedScope = "signed-write"

// pendingAnswer is what a replay leaves under a level's answer key in
// the layout that kept the answer apart from the done key (see
// replaySigned), were it to find the key empty; it never does, since that
// writer bound its answer before marking the level done.
const pendingAnswer = "pending"

// errSignedInProgress answers a replay while the original still runs.
var errSignedInProgress = &httpapi.Problem{Status: http.StatusConflict, Code: "IDEMPOTENCY_KEY_IN_PROGRESS",
	Message: "an identical signed request is still being processed; retry after Retry-After seconds",
	Headers: map[string]string{"Retry-After": "1"}}

// SignedKey names a signed write: the SHA-256 (KeyHash's) of its
// signature (lower-case hex), the method, the path without its query (no
// partner write takes one, so a query added to a captured request names the
// same write) and the body's hash, as
//
//	signature "\n" method " " path "\n" hex(SHA-256(body))
//
// hashed from a buffer on the stack: a signed write's records are named by
// the hash, and nothing needs the key's text.
func SignedKey(signature string, r *http.Request, body []byte) [sha256.Size]byte {
	var stack [256]byte
	sum := sha256.Sum256(body)
	k := append(stack[:0], signature...)
	k = append(append(append(append(k, '\n'), r.Method...), ' '), r.URL.Path...)
	k = hex.AppendEncode(append(k, '\n'), sum[:])
	return sha256.Sum256(k)
}

// signedName is the app's id, a colon and the hex of the signed key: the
// prefix of every record of the write.
func signedName(appID int64, signed *[sha256.Size]byte) string {
	var stack [20 + 1 + 2*sha256.Size]byte
	b := append(strconv.AppendInt(stack[:0], appID, 10), ':')
	return string(hex.AppendEncode(b, signed[:]))
}

// ServeSigned runs a write whose signature alone identifies it (scheme M
// signs neither a nonce nor the route): the signed key (see SignedKey) is
// an implicit idempotency key kept for SignatureTTL. The first request with
// it runs (under its Idempotency-Key, if any, as Serve does) and its answer
// is recorded; an identical replay answers that answer, marked
// Idempotent-Replayed, and runs nothing, whatever Idempotency-Key it
// carries (the signature does not cover that header, so an attacker may
// add or change it). A replay that arrives while the original still runs
// answers 409 IDEMPOTENCY_KEY_IN_PROGRESS.
//
// The records live in store, not in the event log: the write's own events
// are its only trace there, so a refused or unchanged write still appends
// nothing. Answers about a channel user are sealed with the user's data
// key, as Serve's are, so an erasure shreds them.
//
// route is the signature's route binding when authentication left it
// unrecorded (nil when it recorded it): it is recorded and judged before
// anything else answers, as authentication would have, and on a
// RouteClaimer in the statement that claims the write.
func (k *Keeper) ServeSigned(w http.ResponseWriter, r *http.Request, appID int64, body []byte, store SignedStore, signed [sha256.Size]byte, route PendingRoute, h Handler) {
	if _, _, err := checkKey(r); err != nil {
		if route != nil {
			if rerr := route.Record(); rerr != nil {
				err = rerr
			}
		}
		httpapi.Error(w, r, err)
		return
	}
	name := signedName(appID, &signed)
	// The store judges expiry by the wall clock, not the keeper's.
	expires := time.Now().Add(SignatureTTL)
	// Once it may run, the request finishes and records its answer even if
	// the client hangs up: a replay then finds it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), or(k.Budget, DefaultBudget))
	defer cancel()
	r = r.WithContext(ctx)
	var run [16]byte
	if _, err := rand.Read(run[:]); err != nil {
		httpapi.Error(w, r, err)
		return
	}
	first, err := claimSigned(ctx, store, route, nonces.Binding{Scope: signedScope, Key: name + ":run", Value: hex.EncodeToString(run[:]), Expires: expires})
	if err != nil && first {
		// Refused once its app was confirmed current, after the claim
		// was made: the refusal is this write's answer, recorded so
		// that its replays get it too rather than 409 until the claim
		// expires.
		rw := recorderFor(w)
		httpapi.Error(rw, r, err)
		if rerr := k.recordSigned(ctx, store, name, expires, r, body, rw); rerr != nil {
			httpapi.Logger(ctx).Error("idempotency: recording a signed write's answer failed", "err", rerr)
		}
		rw.flush(w, r)
		return
	}
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	if !first {
		if err := k.replaySigned(w, r, store, name, expires); err != nil {
			httpapi.Error(w, r, err)
		}
		return
	}
	rw := recorderFor(w)
	var p *promise
	if ab, ok := store.(AppendBinder); ok && len(r.Header.Values(Header)) == 0 {
		// Without an Idempotency-Key (whose record Serve appends after the
		// write), the handler may promise its answer to ride with its append.
		p = &promise{k: k, store: ab, name: name, expires: expires, r: r, body: body, rw: rw}
		r = r.WithContext(context.WithValue(ctx, promiseKey{}, p))
	}
	k.Serve(rw, r, appID, body, h)
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	if p != nil && p.kept(rw) {
		rw.flush(w, r)
		return
	}
	if err := k.recordSigned(ctx, store, name, expires, r, body, rw); err != nil {
		// The request's effect happened: answer it anyway. Its replays
		// answer 409 until the record expires; none runs it again.
		httpapi.Logger(ctx).Error("idempotency: recording a signed write's answer failed", "err", err)
	}
	rw.flush(w, r)
}

// claimSigned records the route binding left by authentication, if any,
// and claims the signed write (first: this request runs it). On a
// RouteClaimer both go in one statement; when that statement left the
// claim out (the binding holds another route), the route is judged first
// and the claim made on its own, as when the two were separate.
//
// On a HeadRouteClaimer, the statement's head confirms the request's app
// (HeadCheckedRoute). A request refused then may already hold its claim:
// first is then true with the refusal, and the caller records it as the
// write's answer.
func claimSigned(ctx context.Context, store SignedStore, route PendingRoute, claim nonces.Binding) (first bool, err error) {
	hc, atHead := store.(HeadRouteClaimer)
	rc, claims := store.(RouteClaimer)
	if (atHead || claims) && route != nil {
		var c RouteClaim
		sent := time.Now()
		if atHead {
			c, err = hc.BindRouteAndClaimAtHead(ctx, route.Binding(), claim, route.Route())
		} else {
			c.Bound, c.Claimed, c.Fresh, err = rc.BindRouteAndClaim(ctx, route.Binding(), claim, route.Route())
		}
		if err != nil {
			return false, err
		}
		if hr, ok := route.(HeadCheckedRoute); ok && c.HeadKnown {
			err = hr.CheckAt(c.Bound, c.Head, sent)
		} else {
			err = route.Check(c.Bound)
		}
		if err != nil {
			return c.Claimed && c.Fresh, err
		}
		if c.Claimed {
			return c.Fresh, nil
		}
	} else if route != nil {
		if err := route.Record(); err != nil {
			return false, err
		}
	}
	_, first, err = store.Bind(ctx, claim.Scope, claim.Key, claim.Value, claim.Expires)
	if err != nil {
		return false, fmt.Errorf("idempotency: claim a signed write: %w", err)
	}
	return first, nil
}

// maxLevels bounds the levels of the record protocol (see recordSigned):
// each replay that races the original pushes its record one level on.
const maxLevels = 32

// Values of a level's done key.
const (
	levelDone  = "done"  // the original recorded its answer at this level
	levelProbe = "probe" // a replay looked before the original was done
)

// recordSigned records the original's answer. The store has no plain read:
// every look is a first-wins Bind, so a replay that looks for the answer
// before it exists would hold the key. Hence levels: the original binds the
// level's done key to "done", a newline and its answer; a replay binds the
// same key to "probe" and answers from it only when it finds "done". A
// replay that looked first (its probe holds) answers 409, and the original,
// finding the probe, records at the next level; later replays walk the
// levels to the done one. A write thus costs two bindings: its claim and
// its answer.
func (k *Keeper) recordSigned(ctx context.Context, store SignedStore, name string, expires time.Time, r *http.Request, body []byte, rw *recorder) error {
	answer := rw.body.Bytes()
	b, err := k.signedRecord(ctx, name, rw.subject(r, body, rw.status, answer), rw.status, rw.header.Get("Content-Type"), answer)
	if err != nil {
		return err
	}
	record := string(b)
	for level := range maxLevels {
		held, done, err := store.Bind(ctx, signedScope, levelKey(name, "done", level), record, expires)
		if err != nil || done {
			return err
		}
		if strings.HasPrefix(held, levelDone+"\n") {
			// Recorded with the write's append, whose outcome its
			// caller did not learn (a commit's answer lost): replays
			// answer that record, as they would this one.
			return nil
		}
	}
	return errors.New("idempotency: too many replays raced a signed write; its answer is not recorded")
}

func levelKey(name, what string, level int) string {
	return name + ":" + what + ":" + strconv.Itoa(level)
}

// replaySigned answers a replay from the original's record, or 409 while
// the original runs (see recordSigned). It also reads the layout of nodes
// that kept the answer under a key of its own ("answer" at the level, the
// done key holding "done" alone): during a rolling upgrade an older node
// may have recorded the original (docs/upgrades.md, "expand now, contract
// later").
func (k *Keeper) replaySigned(w http.ResponseWriter, r *http.Request, store SignedStore, name string, expires time.Time) error {
	ctx := r.Context()
	for level := range maxLevels {
		state, first, err := store.Bind(ctx, signedScope, levelKey(name, "done", level), levelProbe, expires)
		if err != nil {
			return err
		}
		if first {
			return errSignedInProgress // the original will record at a later level
		}
		if record, ok := strings.CutPrefix(state, levelDone+"\n"); ok {
			return k.writeSigned(w, r, name, record)
		}
		if state != levelDone {
			continue // another replay looked first; the original went on
		}
		record, _, err := store.Bind(ctx, signedScope, levelKey(name, "answer", level), pendingAnswer, expires)
		if err != nil {
			return err
		}
		return k.writeSigned(w, r, name, record)
	}
	return errSignedInProgress
}

// writeSigned writes a recorded answer, marked replayed.
func (k *Keeper) writeSigned(w http.ResponseWriter, r *http.Request, name, record string) error {
	if record == pendingAnswer {
		return errors.New("idempotency: a signed write's level is done without its answer")
	}
	statusText, rest, ok1 := strings.Cut(record, "\n")
	contentType, sealed, ok2 := strings.Cut(rest, "\n")
	status, err := strconv.Atoi(statusText)
	if !ok1 || !ok2 || err != nil {
		return errors.New("idempotency: malformed signed-write record")
	}
	return k.writeReplay(w, r, signedStream(name), sealed, status, contentType, nil)
}

// signedStream is what a signed write's sealed answer is bound to (the
// AEAD's additional data), as a key's stream name is for Serve's answers.
func signedStream(name string) string { return "signed-write-" + name }

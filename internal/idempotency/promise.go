package idempotency

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/healthtech/partner-open-platform/internal/nonces"
)

// AppendBinder is a SignedStore that can write a binding in the
// transaction of the event append a request makes (projections/postgres
// when the event store shares its database): ServeSigned records a signed
// write's answer that way when the handler promises it before its append
// (Promise), so the answer costs no transaction of its own and exists
// exactly when the write committed. The returned context carries the
// binding to the append; bound reports, once the append returned, whether
// the binding was written with the given value.
type AppendBinder interface {
	BindWithAppend(ctx context.Context, b nonces.Binding) (context.Context, func() (bound bool))
}

type promiseKey struct{}

// promise is a signed write's answer announced before its append.
type promise struct {
	k       *Keeper
	store   AppendBinder
	name    string
	expires time.Time
	r       *http.Request
	body    []byte
	// rw is the recorder the handler writes to, which may know whom the
	// answer is about (AnswerAbout).
	rw *recorder

	status      int
	contentType string
	answer      []byte
	bound       func() bool
}

// Promise announces the answer a signed write gives if its next append
// commits, before that append: it returns the context to append with, which
// records that answer in the append's transaction when ServeSigned runs the
// request on an AppendBinder. The answer is then what the client gets and
// what every replay gets, whatever the handler writes afterwards.
// Otherwise (no signed write, an Idempotency-Key, another store, a promise
// already recorded) ctx is returned unchanged and the answer the handler
// writes is recorded after it, as without a promise. A promise made again
// before an append committed replaces the earlier one.
func Promise(ctx context.Context, status int, contentType string, answer []byte) context.Context {
	if !Promising(ctx) {
		return ctx
	}
	p := ctx.Value(promiseKey{}).(*promise)
	// A promise made again (the command decided again after a conflict)
	// replaces the last one, whose append did not commit.
	p.bound = nil
	b, err := p.k.signedRecord(ctx, p.name, p.rw.subject(p.r, p.body, status, answer), status, contentType, answer)
	if err != nil {
		return ctx
	}
	p.status, p.contentType, p.answer = status, contentType, answer
	ctx, p.bound = p.store.BindWithAppend(ctx, nonces.Binding{Scope: signedScope, Key: levelKey(p.name, "done", 0), Value: string(b), Expires: p.expires})
	return ctx
}

// Promising reports whether a Promise made with ctx would be recorded,
// so that a handler renders the answer to promise only then (an embedded
// node's signed writes, a keyed request, record their answer after it).
func Promising(ctx context.Context) bool {
	p, _ := ctx.Value(promiseKey{}).(*promise)
	return p != nil && (p.bound == nil || !p.bound())
}

// kept reports whether the promise was recorded with its append, and then
// puts the promised answer in rw.
func (p *promise) kept(rw *recorder) bool {
	if p.bound == nil || !p.bound() {
		return false
	}
	rw.status = p.status
	rw.header.Set("Content-Type", p.contentType)
	rw.body.Reset()
	rw.body.Write(p.answer)
	return true
}

// signedRecord is a signed write's record as its level's done key holds
// it: "done", the status, the content type and the answer sealed for
// subject (the channel user it is about, or ""), one a line.
func (k *Keeper) signedRecord(ctx context.Context, name, subject string, status int, contentType string, answer []byte) ([]byte, error) {
	// Built in one buffer around the sealing.
	var head [64]byte
	b := append(head[:0], levelDone+"\n"...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(append(append(b, '\n'), contentType...), '\n')
	return k.appendSealed(ctx, b, signedStream(name), subject, answer)
}

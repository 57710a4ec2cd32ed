package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// Claims keeps at most one attempt of a delivery in flight across every node
// that sends from the same deliveries: a node claims a delivery before it
// posts it and releases the claim once the outcome is recorded; a claim that
// is never released lapses after its time to live, and then another node may
// take the delivery. An adapter shared by several processes (Postgres) also
// ends a claim with the process that took it, once the claim is
// DeadClaimGrace old: a dead node's deliveries are taken again within
// seconds, and the time to live bounds only a node that is alive but silent
// (paused, or cut off).
type Claims interface {
	// Claim takes, for ttl, each delivery of ids that nobody holds or whose
	// claim has lapsed, and returns the claims it took (ids held by another
	// claim are left out; a duplicate id counts once).
	Claim(ctx context.Context, owner string, ids []string, ttl time.Duration) ([]Claim, error)
	// Release gives claims back, each only while it is still the one that
	// was taken (same token): a lapsed claim another node has since taken
	// stays with that node.
	Release(ctx context.Context, claims []Claim) error
}

// Claim is one held delivery; Token tells this hold from any later one of
// the same delivery, so a late release cannot drop another node's claim.
type Claim struct {
	DeliveryID string
	Token      string
}

// NewClaimToken returns a random token for one Claim call, so adapters mark
// their claims the same way.
func NewClaimToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// DefaultClaimTTL is how long a delivery stays claimed when its node never
// releases it. It exceeds the HTTP timeout (10 s) plus loading and
// recording; the sender also cuts each POST off before its claim can lapse
// (see AttemptBudget), so even a slow receiver never sees two attempts of
// one delivery overlap. A node that stops mid-attempt without its process
// ending delays that delivery by at most this long; one whose process dies
// delays it by at most DeadClaimGrace.
const DefaultClaimTTL = 30 * time.Second

// DeadClaimGrace is how old a claim of a dead node must be before another
// node may take it: the receiver may still be answering the dead node's
// POST (its connection is closed, but a receiver may not notice), so a
// receiver that answers within this never sees two attempts of one
// delivery overlap, even when their sender dies mid-attempt.
const DeadClaimGrace = 5 * time.Second

// AttemptBudget is how long after claiming a POST may still be running: it
// ends before the claim lapses, so no other node starts the delivery while
// it is open, and the rest of the claim's lifetime is left for recording the
// outcome.
func AttemptBudget(ttl time.Duration) time.Duration {
	return ttl - min(10*time.Second, ttl/3)
}

// ReleasingClaims is a Claims that can give claims back in the same
// transaction as it takes others. A sender whose Claims has it holds the
// claims of ended attempts for up to ReleaseHold and gives them back with
// its next claim, so a steady stream of deliveries costs the shared store
// one transaction per claim instead of two.
type ReleasingClaims interface {
	Claims
	// ReleaseAndClaim claims ids as Claim does, then releases release as
	// Release does, in one transaction: on an error neither happened. An
	// id also named in release is not taken (the claim being released
	// still holds it). A release it could not make without waiting (a row
	// another claimer has locked) is returned in unreleased, for a
	// Release of its own: waiting there, after taking rows of its own,
	// could deadlock with another node doing the same.
	ReleaseAndClaim(ctx context.Context, release []Claim, owner string, ids []string, ttl time.Duration) (claimed, unreleased []Claim, err error)
}

// ReleaseHold is how long a sender keeps the claims of ended attempts
// waiting for its next claim (ReleasingClaims) before it releases them
// alone. Each waits only after its attempt's outcome is recorded and
// projected, so only another attempt of the same delivery can wait on it
// (a resend, or a retry due within this), and this node's sender scans
// again when a scan passed over one of them.
const ReleaseHold = 100 * time.Millisecond

// LoadingClaims is a ReleasingClaims that can read the claimed deliveries'
// streams in the round trip that claims them (Postgres, when the event
// store shares the claims' database): the sender then posts from what the
// claim returned instead of reading each stream on its own.
type LoadingClaims interface {
	ReleasingClaims
	// ClaimLoading is ReleaseAndClaim (release may be empty) that also
	// returns the stream of each delivery it claimed, by delivery id, read
	// after the claim was taken: it holds every event appended before
	// that, such as the outcome of the attempt whose released claim this
	// one follows. Streams is nil when the adapter reads no streams (the
	// caller reads them itself); a claimed delivery missing from it has
	// no stream.
	ClaimLoading(ctx context.Context, release []Claim, owner string, ids []string, ttl time.Duration) (LoadedClaims, error)
}

// LoadedClaims is what ClaimLoading took and read.
type LoadedClaims struct {
	Claimed, Unreleased []Claim
	Streams             map[string][]events.Recorded
}

// AppendClaims is a Claims whose claims can be taken by the transaction of
// an event-store append (Postgres, when the event store shares the claims'
// database): the dispatcher claims the deliveries it creates for this
// node's sender in the append that creates them, and the sender posts
// them without a claim of its own.
type AppendClaims interface {
	Claims
	// ClaimWithAppend returns a context whose first append that writes
	// events also claims ids for owner, for ttl, in that append's own
	// transaction (the claims exist exactly when it committed), the
	// claims it takes (one token), and taken, which reports once that
	// append returned whether it took every one of them. When taken is
	// false the caller releases claims (a release by token drops only
	// rows that statement took, say by a commit whose outcome the caller
	// did not learn). A nil taken means the adapter cannot: the context is
	// ctx and the caller claims as usual.
	ClaimWithAppend(ctx context.Context, owner string, ids []string, ttl time.Duration) (context.Context, []Claim, func() bool)
	// ReleaseWithAppend returns a context whose first append that writes
	// events also releases claims in that append's transaction, and
	// released, which reports once that append returned whether it
	// released every one (a claim row another transaction had locked is
	// left, not waited for: the caller then releases as usual). A nil
	// released means the adapter cannot: the context is ctx.
	ReleaseWithAppend(ctx context.Context, claims []Claim) (context.Context, func() bool)
}

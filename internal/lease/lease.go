// Package lease is the port through which nodes sharing one store agree on
// a single writer for a named job (a read model, the relay, the
// webhook dispatcher): a holder acquires a lease for a time to live, renews
// it while it works, and gets a fencing token that grows with every new
// acquisition, so a write made under a lease that was lost in the meantime
// (a paused or partitioned old owner) can be refused by the store it
// writes to.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"
)

// ErrHeld is returned by Acquire while another holder has the lease: the
// caller tries again later (Campaign does).
var ErrHeld = errors.New("lease: held by another holder")

// ErrLost says a lease is no longer the caller's: another holder took it
// (its token is newer) or it was released. Renew, Check and every fenced
// write return it (wrapped), and the holder must stop writing at once.
var ErrLost = errors.New("lease: lost")

// DefaultTTL is how long a lease lives without renewal unless configured
// (PLATFORM_LEASE_TTL): a dead owner's work is taken over within it.
const DefaultTTL = 10 * time.Second

// Lease is one acquisition of a named lease.
type Lease struct {
	// Name is what the lease guards, such as "projection/users".
	Name string
	// Holder identifies the node holding it ("" when nobody does).
	Holder string
	// Token is the fencing token: every acquisition of Name gets a larger
	// one than all before it, so stores can refuse writes of older holders.
	Token int64
	// Expires is when the lease lapses unless renewed, by the clock of the
	// store that keeps it.
	Expires time.Time
}

// Store keeps leases. Every adapter passes leasetest.Run.
type Store interface {
	// Acquire takes name for holder for ttl if nobody holds it, its last
	// holder let it expire or released it, or holder itself holds it (a
	// restarted node takes its own lease back at once). Each acquisition
	// returns a new, larger token, so a previous acquisition by the same
	// holder is fenced out too. While another holder has it, the error
	// wraps ErrHeld and names that holder.
	Acquire(ctx context.Context, name, holder string, ttl time.Duration) (Lease, error)
	// Renew extends l by ttl from now if its token is still the current one
	// (even after it expired, when nobody took it since: no newer token can
	// have written); otherwise it returns an error wrapping ErrLost.
	Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// Release gives l up so that another holder can take it at once; it is
	// a no-op when l was already lost.
	Release(ctx context.Context, l Lease) error
	// Check returns an error wrapping ErrLost unless l's token is current,
	// for writers whose store cannot fence inside its own transaction.
	Check(ctx context.Context, l Lease) error
	// Get returns name's current holder and token; Holder is "" when the
	// lease is free (never taken, released or expired).
	Get(ctx context.Context, name string) (Lease, error)
}

// EnvNodeID names the variable that sets a node's identity as a holder.
const EnvNodeID = "PLATFORM_NODE_ID"

// NodeID is PLATFORM_NODE_ID, or hostname-pid-random when unset: unique
// per process, so two processes never mistake each other's lease for their own.
func NodeID() string {
	if id := os.Getenv(EnvNodeID); id != "" {
		return id
	}
	return DefaultNodeID()
}

// DefaultNodeID is hostname-pid-random, the identity of a node not given one.
func DefaultNodeID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "node"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

type fenceKey struct{}

// WithFence returns ctx carrying l, so that a store writing on the
// holder's behalf deep in a call chain (a read-model transaction) can fence
// its write on l without every signature in between naming it.
func WithFence(ctx context.Context, l Lease) context.Context {
	return context.WithValue(ctx, fenceKey{}, l)
}

// FenceFrom returns the lease WithFence put in ctx, if any.
func FenceFrom(ctx context.Context) (Lease, bool) {
	l, ok := ctx.Value(fenceKey{}).(Lease)
	return l, ok
}

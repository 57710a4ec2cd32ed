package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	evmemory "github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/lease"
	leasepg "github.com/healthtech/partner-open-platform/internal/lease/postgres"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/postgres"
)

// gated holds the users read model's next Update inside its transaction until
// the test lets it go: a node paused mid-batch (a GC pause, a stopped VM).
type gated struct {
	*postgres.Store
	mu      sync.Mutex
	armed   bool
	fenced  bool // pause once the fence is taken (after the opening round trip), not before
	entered chan struct{}
	release chan struct{}
}

func (g *gated) arm(afterFence bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed, g.fenced = true, afterFence
	g.entered, g.release = make(chan struct{}), make(chan struct{})
}

func (g *gated) Update(ctx context.Context, projection string, pos events.Position, fn func(projections.UserTx) error) error {
	return g.Store.Update(ctx, projection, pos, func(tx projections.UserTx) error {
		g.mu.Lock()
		armed, fenced, entered, release := g.armed, g.fenced, g.entered, g.release
		g.armed = false
		g.mu.Unlock()
		if armed {
			if fenced {
				// A read sends what is queued: the fence, which now holds
				// the lease row until this transaction ends.
				if _, err := tx.User(ctx, -1); err != nil && !errors.Is(err, projections.ErrNotFound) {
					return err
				}
			}
			close(entered)
			<-release
		}
		return fn(tx)
	})
}

// silenced is a lease store whose holder's renewals stop reaching the
// database once silenced: a node paused, or cut off, keeps believing it
// holds a lease that lapses in the database. Each renewal waits until its
// context ends.
type silenced struct {
	lease.Store
	on atomic.Bool
}

func (s *silenced) Renew(ctx context.Context, l lease.Lease, ttl time.Duration) (lease.Lease, error) {
	if s.on.Load() {
		<-ctx.Done()
		return lease.Lease{}, ctx.Err()
	}
	return s.Store.Renew(ctx, l, ttl)
}

func appendUser(t *testing.T, store events.Store, reg *events.Registry, id int64) events.Position {
	t.Helper()
	ev, err := reg.Encode(&catalog.UserRegistered{AppID: 1, OpenUserID: id, ChannelUserID: fmt.Sprintf("c-%d", id),
		Profile: catalog.Profile{Name: "n", Gender: "male"}, RegisteredAt: time.Now()}, events.Metadata{OccurredAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := store.Append(context.Background(), fmt.Sprintf("user-%d", id), events.NoStream(), ev)
	if err != nil {
		t.Fatal(err)
	}
	return res.Position
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting until %s", what)
}

// TestLostLeaseOwnerCannotWrite: the users read model's owner is paused in the
// middle of a batch while another node takes its lease (after it expired);
// when it resumes, its transaction fails, neither its rows nor its
// checkpoint are written, and it stops projecting and follows the new owner.
// Paused before its fence, the fence refuses it; paused after (holding the
// lease row), the lapse and the takeover wait until the server ends the idle
// transaction, and its commit fails.
func TestLostLeaseOwnerCannotWrite(t *testing.T) {
	t.Parallel()
	for _, afterFence := range []bool{false, true} {
		t.Run(fmt.Sprintf("paused after the fence %v", afterFence), func(t *testing.T) {
			ctx := context.Background()
			s := open(t, postgres.MigratedDB(t))
			defer s.Close()
			s.SetLeaseTTL(500 * time.Millisecond) // idle fenced transactions end after it
			leases := leasepg.New(s.Pool())
			aLeases := &silenced{Store: leases}
			store, reg := evmemory.New(), catalog.Registry()
			g := &gated{Store: s}
			a := subscribe.NewRunner(store, reg, projections.UsersProjector(g), slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
			// A long TTL: node a renews rarely, so it does not notice the
			// loss before it resumes; only the fence stops it.
			a.Own(subscribe.Ownership{Leases: aLeases, Holder: "a", TTL: time.Minute, Shared: s, Poll: 50 * time.Millisecond})
			rctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); _ = a.Run(rctx) }()
			defer func() { cancel(); <-done }()

			p1 := appendUser(t, store, reg, 1)
			wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
			defer wcancel()
			if err := a.WaitFor(wctx, p1); err != nil {
				t.Fatal(err)
			}
			if !a.Owning() {
				t.Fatal("the only runner does not own its family")
			}

			g.arm(afterFence)
			appendUser(t, store, reg, 2)
			<-g.entered
			// The lease lapses, a's renewals having stopped, and b takes it.
			// After the fence, the lapse waits for the server to end a's
			// idle transaction (which holds the lease row FOR SHARE). A
			// renewal of a's that got through would have kept the lease,
			// its token being still the current one.
			aLeases.on.Store(true)
			if _, err := s.Pool().Exec(ctx, `UPDATE leases SET expires_at = now() - interval '1 second' WHERE name = $1`, subscribe.LeaseName("users")); err != nil {
				t.Fatal(err)
			}
			took := make(chan lease.Lease, 1)
			go func() {
				l, err := leases.Acquire(ctx, subscribe.LeaseName("users"), "b", time.Minute)
				if err != nil {
					t.Errorf("b's takeover: %v", err)
				}
				took <- l
			}()
			// b holds the lease before a resumes, so a's retry of the batch
			// meets b's token.
			b := <-took
			close(g.release)
			if b.Holder != "b" {
				t.Fatalf("takeover %+v", b)
			}

			eventually(t, "a stops projecting", func() bool { return !a.Owning() })
			if _, err := s.User(ctx, 1, 2); !errors.Is(err, projections.ErrNotFound) {
				t.Fatalf("the user of a's paused batch was written after a lost the lease: %v", err)
			}
			if cp, _ := s.Checkpoint(ctx, "users"); cp != p1 {
				t.Fatalf("checkpoint %v after a lost the lease, want %v (a's last batch before it)", cp, p1)
			}
			eventually(t, "a names b as the owner", func() bool { return a.Stats().Owner == "b" })

			// The new owner writes under its own token; a's old token is refused.
			if err := s.Update(lease.WithFence(ctx, b), "users", p1, func(projections.UserTx) error { return nil }); err != nil {
				t.Fatalf("the new owner's write: %v", err)
			}
			old := lease.Lease{Name: b.Name, Holder: "a", Token: b.Token - 1}
			if err := s.Update(lease.WithFence(ctx, old), "users", p1, func(projections.UserTx) error { return nil }); !errors.Is(err, lease.ErrLost) {
				t.Fatalf("a write under the old token: %v, want ErrLost", err)
			}
		})
	}
}

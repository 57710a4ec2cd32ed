package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/lease"
	"github.com/healthtech/partner-open-platform/internal/lease/memory"
)

// RunHeld runs its work only while the lease is this holder's, fenced with
// it, and gives the lease up when the work ends, so that another node
// takes over at once rather than after the time to live.
func TestRunHeldRunsUnderTheLeaseAndReleasesIt(t *testing.T) {
	s := memory.New()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	failed := errors.New("the work failed")
	err := lease.RunHeld(ctx, s, "job", "node-a", time.Minute, nil, func(ctx context.Context) error {
		l, ok := lease.FenceFrom(ctx)
		if !ok || l.Holder != "node-a" || l.Name != "job" {
			t.Errorf("the work's context carries %+v, %v: want node-a's lease on job", l, ok)
		}
		if cur, err := s.Get(ctx, "job"); err != nil || cur.Holder != "node-a" {
			t.Errorf("while the work runs the lease is %+v, %v: want held by node-a", cur, err)
		}
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatalf("RunHeld = %v, want the work's error", err)
	}
	if cur, err := s.Get(ctx, "job"); err != nil || cur.Holder != "" {
		t.Fatalf("after the work failed the lease is %+v, %v: want it released", cur, err)
	}

	// A stop ends the work through its context, answers nil and releases.
	stop, stopNow := context.WithCancel(ctx)
	err = lease.RunHeld(stop, s.Session(), "job", "node-b", time.Minute, nil, func(ctx context.Context) error {
		stopNow()
		<-ctx.Done()
		return ctx.Err()
	})
	if err != nil {
		t.Fatalf("RunHeld after a stop = %v, want nil", err)
	}
	if cur, err := s.Get(ctx, "job"); err != nil || cur.Holder != "" {
		t.Fatalf("after a stop the lease is %+v, %v: want it released", cur, err)
	}
}

// A holder whose lease is taken from it (its renewals refused) stops its
// work and stands by to campaign again, and runs again once it wins.
func TestRunHeldStandsByAfterALostLease(t *testing.T) {
	s := memory.New()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a := s.Session()
	runs := 0
	err := lease.RunHeld(ctx, a, "job", "node-a", 300*time.Millisecond, nil, func(hctx context.Context) error {
		runs++
		if runs == 2 {
			return errors.New("second run")
		}
		l, _ := lease.FenceFrom(hctx)
		if err := a.Release(ctx, l); err != nil { // as if it lapsed: the next renewal is refused
			t.Errorf("release: %v", err)
		}
		<-hctx.Done()
		return nil
	})
	if err == nil || err.Error() != "second run" || runs != 2 {
		t.Fatalf("RunHeld = %v after %d runs: want the second run's error", err, runs)
	}
}

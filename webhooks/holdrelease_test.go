package webhooks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"
)

// releasingClaims is a ReleasingClaims that records what it is asked.
type releasingClaims struct {
	claimAll
	mu       sync.Mutex
	released [][]string // each Release call's ids
	together [][]string // each ReleaseAndClaim call's released ids
	fail     error
}

func (c *releasingClaims) Release(ctx context.Context, cs []Claim) error {
	c.mu.Lock()
	c.released = append(c.released, claimIDs(cs))
	c.mu.Unlock()
	return c.claimAll.Release(ctx, cs)
}

func (c *releasingClaims) ReleaseAndClaim(ctx context.Context, release []Claim, owner string, ids []string, ttl time.Duration) ([]Claim, []Claim, error) {
	c.mu.Lock()
	fail := c.fail
	if fail == nil {
		c.together = append(c.together, claimIDs(release))
	}
	c.mu.Unlock()
	if fail != nil {
		return nil, nil, fail
	}
	got, err := c.claimAll.Claim(ctx, owner, ids, ttl)
	if err != nil {
		return nil, nil, err
	}
	return got, nil, c.claimAll.Release(ctx, release)
}

func (c *releasingClaims) calls() (alone, together [][]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.released), slices.Clone(c.together)
}

func claimIDs(cs []Claim) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.DeliveryID)
	}
	slices.Sort(out)
	return out
}

// holdingSender is a Dispatcher on rc with its release goroutine running,
// as RunSender starts it; stop closes the releases and waits for it.
func holdingSender(t *testing.T, rc *releasingClaims) (d *Dispatcher, releases chan Claim, stop func()) {
	t.Helper()
	rc.held = map[string]bool{}
	d = &Dispatcher{Claims: rc, Node: "n", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	d.handover.init()
	releases = make(chan Claim)
	done := make(chan struct{})
	go d.releaseClaims(context.Background(), releases, done)
	var once sync.Once
	stop = func() { once.Do(func() { close(releases); <-done }) }
	t.Cleanup(stop)
	return d, releases, stop
}

// endHeldAttempt claims id as the sender does and hands the claim to the
// release goroutine as an ended attempt does, once it is held.
func endHeldAttempt(t *testing.T, d *Dispatcher, releases chan Claim, id string) {
	t.Helper()
	got, err := d.Claims.Claim(context.Background(), d.Node, []string{id}, time.Minute)
	if err != nil || len(got) != 1 {
		t.Fatalf("claim %s: %v, %v", id, got, err)
	}
	d.setAttempting(id, true)
	releases <- got[0]
	waitUntil(t, fmt.Sprintf("%s held", id), func() bool {
		d.attemptingMu.Lock()
		defer d.attemptingMu.Unlock()
		_, ok := d.held[id]
		return ok || !d.attempting[id]
	})
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for range 1000 {
		if ok() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("never: %s", what)
}

// On a store that can release in a claim's transaction, the claim of an
// ended attempt is given back by the sender's next claim, not by a
// statement of its own; the delivery is then free again on every node and
// no longer this node's attempt.
func TestEndedAttemptsClaimGoesBackWithTheNextClaim(t *testing.T) {
	rc := &releasingClaims{}
	d, releases, _ := holdingSender(t, rc)
	endHeldAttempt(t, d, releases, "d1")
	got, err := d.claimReleasing(context.Background(), []string{"d2"})
	if err != nil || len(got) != 1 || got[0].DeliveryID != "d2" {
		t.Fatalf("claim d2: %v, %v", got, err)
	}
	alone, together := rc.calls()
	if len(alone) != 0 || fmt.Sprint(together) != "[[d1]]" {
		t.Fatalf("releases alone %v, with a claim %v; want d1 released with the claim of d2 and nothing alone", alone, together)
	}
	if d.isAttempting("d1") {
		t.Fatal("d1 is still this node's attempt after its claim went back")
	}
	if again, _ := (&rc.claimAll).Claim(context.Background(), "other", []string{"d1"}, time.Minute); len(again) != 1 {
		t.Fatal("another node cannot take d1 after its release")
	}
}

// With no claim to ride on, a held claim is released on its own after the
// hold, and every held claim is released when the sender stops.
func TestHeldClaimsAreReleasedAloneAfterTheHoldAndAtStop(t *testing.T) {
	rc := &releasingClaims{}
	d, releases, stop := holdingSender(t, rc)
	endHeldAttempt(t, d, releases, "d1")
	waitUntil(t, "d1 released alone", func() bool { return !d.isAttempting("d1") })
	if alone, together := rc.calls(); fmt.Sprint(alone) != "[[d1]]" || len(together) != 0 {
		t.Fatalf("releases alone %v, with a claim %v; want d1 alone", alone, together)
	}
	got, _ := d.Claims.Claim(context.Background(), d.Node, []string{"d2"}, time.Minute)
	d.setAttempting("d2", true)
	releases <- got[0]
	stop()
	if alone, _ := rc.calls(); fmt.Sprint(alone) != "[[d1] [d2]]" || d.isAttempting("d2") {
		t.Fatalf("after stop: releases alone %v, d2 attempting %v; want d2 released", alone, d.isAttempting("d2"))
	}
}

// A scan that passes over a held delivery (due again: a retry or a
// resend) makes the sender scan again once the claim is released, so the
// delivery is not left for the idle rescan.
func TestScanPassedOverAHeldDeliveryScansAgainAfterRelease(t *testing.T) {
	rc := &releasingClaims{}
	d, releases, _ := holdingSender(t, rc)
	endHeldAttempt(t, d, releases, "d1")
	if !d.passOver("d1") {
		t.Fatal("a scan did not pass over d1, this node's held claim")
	}
	if d.rescan.Load() {
		t.Fatal("rescan asked before the release")
	}
	if _, err := d.claimReleasing(context.Background(), []string{"d2"}); err != nil {
		t.Fatal(err)
	}
	if !d.rescan.Load() {
		t.Fatal("the release of a passed-over delivery asked no rescan")
	}
	select {
	case <-d.handover.wakeup():
	default:
		t.Fatal("the sender was not woken for the rescan")
	}
}

// When the claim with releases fails, neither happened: the held claims
// are released on their own and the claim's error is returned.
func TestFailedClaimReleasesTheHeldClaimsAlone(t *testing.T) {
	rc := &releasingClaims{fail: errors.New("connection reset")}
	d, releases, _ := holdingSender(t, rc)
	endHeldAttempt(t, d, releases, "d1")
	if _, err := d.claimReleasing(context.Background(), []string{"d2"}); err == nil {
		t.Fatal("the claim's failure was not returned")
	}
	if alone, _ := rc.calls(); fmt.Sprint(alone) != "[[d1]]" || d.isAttempting("d1") {
		t.Fatalf("releases alone %v, d1 attempting %v; want d1 released alone", alone, d.isAttempting("d1"))
	}
}

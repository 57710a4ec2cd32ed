package webhooks

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// ridingStore runs what a context carries (rideOn) once an append made
// with it returned without error, as a Postgres rider is written by the
// append's transaction.
type ridingStore struct{ *countingStore }

type rideKey struct{}

func rideOn(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, rideKey{}, f)
}

func ride(ctx context.Context) {
	if f, ok := ctx.Value(rideKey{}).(func()); ok {
		f()
	}
}

func (s ridingStore) Append(ctx context.Context, stream string, expected events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	res, err := s.countingStore.Append(ctx, stream, expected, evs...)
	if err == nil {
		ride(ctx)
	}
	return res, err
}

func (s ridingStore) AppendMulti(ctx context.Context, parts ...events.StreamAppend) ([]events.AppendResult, error) {
	res, err := s.countingStore.AppendMulti(ctx, parts...)
	if err == nil {
		ride(ctx)
	}
	return res, err
}

// appendClaims is an AppendClaims over claimAll that counts the claims the
// sender makes itself.
type appendClaims struct {
	claimAll
	mu     sync.Mutex
	claims int // Claim calls
}

func (c *appendClaims) Claim(ctx context.Context, owner string, ids []string, ttl time.Duration) ([]Claim, error) {
	c.mu.Lock()
	c.claims++
	c.mu.Unlock()
	return c.claimAll.Claim(ctx, owner, ids, ttl)
}

func (c *appendClaims) ClaimWithAppend(ctx context.Context, owner string, ids []string, ttl time.Duration) (context.Context, []Claim, func() bool) {
	cs := make([]Claim, len(ids))
	for i, id := range ids {
		cs[i] = Claim{DeliveryID: id, Token: "t"}
	}
	var took atomic.Bool
	return rideOn(ctx, func() {
		got, _ := c.claimAll.Claim(ctx, owner, ids, ttl)
		took.Store(len(got) == len(ids))
	}), cs, took.Load
}

func (c *appendClaims) ReleaseWithAppend(ctx context.Context, cs []Claim) (context.Context, func() bool) {
	var done atomic.Bool
	return rideOn(ctx, func() { done.Store(c.claimAll.Release(ctx, cs) == nil) }), done.Load
}

func (c *appendClaims) held() int {
	c.claimAll.mu.Lock()
	defer c.claimAll.mu.Unlock()
	return len(c.claimAll.held)
}

// appendClaimsSender runs a (not Sole) sender over AppendClaims until the
// test ends.
func appendClaimsSender(t *testing.T, apps appDirectory) (knownFixture, *appendClaims) {
	t.Helper()
	f := newKnownFixture(t, false)
	f.d.Store = ridingStore{f.store}
	ac := &appendClaims{claimAll: claimAll{held: map[string]bool{}}}
	f.d.Workers, f.d.Deliveries, f.d.Claims = 4, &dueSchedule{}, ac
	if apps != nil {
		url := f.d.Apps.(appDirectory)[1].WebhookURL
		for id, app := range apps {
			app.WebhookURL, app.WebhookSecret = url, "secret"
			apps[id] = app
		}
		f.d.Apps = apps
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = f.d.RunSender(ctx) }()
	t.Cleanup(func() { cancel(); <-stopped })
	waitUntil(t, "the sender's start", f.d.handover.accepting)
	return f, ac
}

// createAtOnce records deliveries of app 1 as the creation pipeline does.
func createAtOnce(t *testing.T, d *Dispatcher, ids ...string) {
	t.Helper()
	var p PreparedBatch
	for _, id := range ids {
		c := catalog.DeliveryCreated{DeliveryID: id, AppID: 1, Event: "user.profile.updated", SourceStream: "user-" + id,
			Body: `{"delivery_id":"` + id + `","open_user_id":7}`, Deliver: true}
		ev, err := d.encode(c, "")
		if err != nil {
			t.Fatal(err)
		}
		p.created, p.evs = append(p.created, c), append(p.evs, ev)
	}
	if err := d.CommitBatches(context.Background(), []PreparedBatch{p}); err != nil {
		t.Fatal(err)
	}
}

func streamLen(t *testing.T, d *Dispatcher, id string) int {
	t.Helper()
	recs, err := d.Store.ReadStream(context.Background(), domain.DeliveryStream(id), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// Deliveries this node creates are claimed by the append that creates
// them and released by the append of their outcome: each is posted once
// and recorded, the sender claims nothing itself, and no claim is left.
func TestCreatedDeliveriesAreSentOnTheirCreationsClaim(t *testing.T) {
	f, ac := appendClaimsSender(t, nil)
	ids := []string{"d1", "d2", "d3", "d4", "d5"}
	createAtOnce(t, f.d, ids...)
	for _, id := range ids {
		waitUntil(t, id+"'s outcome", func() bool { return streamLen(t, f.d, id) == 2 && !f.d.isAttempting(id) })
	}
	if got := f.rcv.posts(); len(got) != len(ids) || f.rcv.badSig != 0 {
		t.Fatalf("receiver got %v (%d badly signed), want each of %v once", got, f.rcv.badSig, ids)
	}
	ac.mu.Lock()
	claims := ac.claims
	ac.mu.Unlock()
	if claims != 0 {
		t.Errorf("the sender claimed %d times, want never (creation claimed)", claims)
	}
	if n := ac.held(); n != 0 {
		t.Errorf("%d claims left held after every outcome", n)
	}
}

// A delivery its creation claimed that the sender cannot attempt (its app
// was suspended) gives its claim back at once, unsent, so that any node
// may take it once the app is resumed.
func TestACreationClaimTheSenderCannotUseIsGivenBack(t *testing.T) {
	f, ac := appendClaimsSender(t, appDirectory{1: {AppID: 1, Suspended: true}})
	createAtOnce(t, f.d, "d1")
	waitUntil(t, "d1's claim given back", func() bool { return ac.held() == 0 && !f.d.isAttempting("d1") })
	if got := f.rcv.posts(); len(got) != 0 {
		t.Fatalf("a suspended app's delivery was posted: %v", got)
	}
	if n := streamLen(t, f.d, "d1"); n != 1 {
		t.Fatalf("d1's stream holds %d events, want its creation alone", n)
	}
}

// A delivery its creation claimed whose user is erased before the attempt
// is read from its stream, where its body reads erased, and is not sent.
func TestACreationClaimedDeliveryOfAnErasedUserIsNotSent(t *testing.T) {
	f := newKnownFixture(t, false)
	c := catalog.DeliveryCreated{DeliveryID: "d1", AppID: 1, Event: "user.profile.updated", SourceStream: "user-7",
		Body: `{"delivery_id":"d1","open_user_id":7}`, Deliver: true}
	ev, err := f.d.encode(c, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.d.Store.Append(context.Background(), domain.DeliveryStream("d1"), events.NoStream(), ev); err != nil {
		t.Fatal(err)
	}
	pre := &preClaimed{claim: Claim{DeliveryID: "d1", Token: "t"}, at: time.Now(), del: createdDelivery(c, time.Now(), ""),
		subject: createdSubject("d1", ev.Data)}
	f.store.erase("user-7")
	key := endpointKey{app: 1}
	app, _ := f.d.Apps.ByID(1)
	url := endpointURL(app, 0)
	f.eps.acquire(key, url, time.Now())
	f.d.attempt(context.Background(), f.eps, claimed{Claim: pre.claim, ep: key, url: url, pre: pre}, pre.at, func() {}, func() {})
	if got := f.rcv.posts(); len(got) != 0 {
		t.Fatalf("receiver got %v, want nothing: the user was erased", got)
	}
	if n := f.store.readsOf("d1"); n != 1 {
		t.Fatalf("the attempt read the stream %d times, want once", n)
	}
}

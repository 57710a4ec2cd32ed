package webhooks

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/webhooks/targets"
)

// Clock lets tests move time through the retry schedule.
type Clock interface {
	Now() time.Time
	// Until fires once the clock reads t or later. It takes the instant, not
	// a duration from the clock's now, so a sender that read the time, scanned
	// and then waits for "now + wait" cannot sleep past a due time when the
	// clock moved meanwhile (a test clock jumps: a duration counted from the
	// jumped time waited for a retry that was already due, forever).
	Until(t time.Time) <-chan time.Time
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now is time.Now.
func (SystemClock) Now() time.Time { return time.Now() }

// Until is time.After of the time left until t (at once if t has passed).
func (SystemClock) Until(t time.Time) <-chan time.Time { return time.After(time.Until(t)) }

// Sign computes X-Webhook-Signature: hex HMAC-SHA256 of timestamp "." body.
func Sign(secret, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte("."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Apps is the app directory the dispatcher reads URLs, subscriptions and secrets from.
type Apps interface {
	ByID(id int64) (domain.App, bool)
}

// DueQueue is the deliveries read model as the sender reads it: which
// deliveries are due, and when the next one will be.
type DueQueue interface {
	// Due lists pending or retrying deliveries with NextAttemptAt <= now,
	// earliest first, at most limit, leaving out the apps of skipApps (the
	// sender cannot send to them now: suspended, breaker open).
	Due(ctx context.Context, now time.Time, limit int, skipApps ...int64) ([]domain.DueDelivery, error)
	// NextDue is the earliest NextAttemptAt of a pending or retrying delivery.
	NextDue(ctx context.Context) (time.Time, bool, error)
}

// DueAndNext is a DueQueue that reads Due and NextDue in one round trip
// (on Postgres, one transaction instead of two per scan).
type DueAndNext interface {
	DueAndNext(ctx context.Context, now time.Time, limit int, skipApps ...int64) (due []domain.DueDelivery, next time.Time, ok bool, err error)
}

// Progress is how far a read model the dispatcher depends on has got: it
// decides only on what the app directory has seen, and reads the due queue
// only once its own outcomes are projected.
type Progress interface {
	// WaitFor blocks until the read model has applied pos, or ctx ends.
	WaitFor(ctx context.Context, pos events.Position) error
	// WaitReady blocks until the read model has caught up with the log once.
	WaitReady(ctx context.Context) error
	// Changed is closed the next time the read model advances.
	Changed() <-chan struct{}
}

// Dispatcher creates deliveries from the log and sends them.
type Dispatcher struct {
	Store      events.Store
	Registry   *events.Registry
	Apps       Apps
	AppsReady  Progress // the directory must have seen an event's position before it decides
	Deliveries DueQueue
	Projected  Progress // the deliveries projection
	// Reflected waits until the read models a partner may read after a
	// webhook reflect the event (nil: none).
	Reflected interface {
		WaitFor(ctx context.Context, pos events.Position) error
	}
	Client   *http.Client
	Clock    Clock
	Schedule []time.Duration
	Location *time.Location
	Log      *slog.Logger
	Workers  int
	// Claims keeps one attempt of a delivery in flight across every node
	// sending from the same deliveries (RunSender needs it).
	Claims Claims
	// ClaimTTL is how long a claim lasts if its node never releases it
	// (default DefaultClaimTTL); each POST is cut off before its claim lapses.
	ClaimTTL time.Duration
	// Node names this node in its claims, so an operator sees who holds what.
	Node string
	// OnAttempt observes each attempt; firstDelay is set on a delivery's first attempt.
	OnAttempt func(event, outcome string, firstDelay *time.Duration)
	// PerEndpoint bounds concurrent POSTs to one app's endpoint (default
	// DefaultPerEndpoint), so a slow endpoint holds at most this many of
	// the Workers and never everyone's.
	PerEndpoint int
	// BreakerFailures failed or timed-out POSTs in a row open an endpoint's
	// breaker (default DefaultBreakerFailures); BreakerCooldown is how long
	// it stays open before one probe (default DefaultBreakerCooldown,
	// doubling per failed probe up to 10 times).
	BreakerFailures int
	BreakerCooldown time.Duration
	// OnBreaker observes an endpoint's breaker changing state (metrics).
	OnBreaker func(appID int64, state string)
	// CreateConcurrency bounds how many subjects' deliveries one batch of
	// CreateBatch appends at once (default DefaultCreateConcurrency); the
	// store's group commit writes them in few transactions.
	CreateConcurrency int
	// Sole says this dispatcher is the only one that sends or records
	// attempts of its deliveries and no other process appends to their
	// streams (the embedded node: one process over its own log, claims in
	// memory). Its sender then attempts a delivery whose stream it created,
	// appended to or loaded as it knows it, without reading the stream
	// again: the outcome's expected revision still refuses to record over
	// any append it did not know of. Without Sole, every attempt loads.
	Sole bool

	// known is what a Sole dispatcher knows of deliveries' streams.
	known knownSet
	// signers keeps keyed HMACs of the endpoints' secrets.
	signers signers

	breakersOnce sync.Once
	breakerSet   *breakers

	// attempting holds the deliveries this node's sender has claimed and
	// not yet released: their rows stay due until the outcome is
	// projected, and claimDue passes over them without spending an
	// endpoint slot on a claim it already holds.
	attemptingMu sync.Mutex
	attempting   map[string]bool
	// held are the claims of ended attempts waiting to be released with
	// the sender's next claim (ReleasingClaims), each with whether a scan
	// passed over its delivery as due meanwhile; rescan tells the sender
	// to scan again once such a one is released.
	held   map[string]heldClaim
	rescan atomic.Bool
	// unrecorded are the attempting deliveries whose attempt recorded no
	// outcome (recheckOnRelease); recheck tells the sender to scan again,
	// spaced like after a move: a delivery it had in hand may still be due
	// (such an attempt's claim was released; another node held a
	// candidate's claim).
	unrecorded map[string]bool
	recheck    atomic.Bool

	// handover carries deliveries this node creates to its sender.
	handover handover
	// handed and news are how the sender learns what the deliveries
	// projection applies here (appliedHere).
	handed handedSet
	news   appliedNews
}

// setAttempting marks id as claimed by this node's sender, or no longer.
func (d *Dispatcher) setAttempting(id string, on bool) {
	d.attemptingMu.Lock()
	defer d.attemptingMu.Unlock()
	if d.attempting == nil {
		d.attempting = map[string]bool{}
	}
	if on {
		d.attempting[id] = true
	} else {
		delete(d.attempting, id)
	}
}

// attemptingCount is how many deliveries this node's sender holds.
func (d *Dispatcher) attemptingCount() int {
	d.attemptingMu.Lock()
	defer d.attemptingMu.Unlock()
	return len(d.attempting)
}

// isAttempting reports whether this node's sender holds id's claim.
func (d *Dispatcher) isAttempting(id string) bool {
	d.attemptingMu.Lock()
	defer d.attemptingMu.Unlock()
	return d.attempting[id]
}

// endpoints returns the per-endpoint bounds and breakers, made on first use.
func (d *Dispatcher) endpoints() *breakers {
	d.breakersOnce.Do(func() {
		limit, threshold, cooldown := d.PerEndpoint, d.BreakerFailures, d.BreakerCooldown
		if limit <= 0 {
			limit = DefaultPerEndpoint
		}
		if threshold <= 0 {
			threshold = DefaultBreakerFailures
		}
		if cooldown <= 0 {
			cooldown = DefaultBreakerCooldown
		}
		d.breakerSet = newBreakers(limit, threshold, cooldown, func(appID int64, from, to string, failures int) {
			if to == BreakerOpen {
				d.Log.Warn("webhook endpoint breaker open: its deliveries wait for a probe", "app_id", appID, "from", from, "failures_in_a_row", failures)
			} else {
				d.Log.Info("webhook endpoint breaker", "app_id", appID, "from", from, "to", to)
			}
			if d.OnBreaker != nil {
				d.OnBreaker(appID, to)
			}
		})
	})
	return d.breakerSet
}

// Endpoints lists the breaker of every endpoint this node has posted to, for operators.
func (d *Dispatcher) Endpoints() []EndpointState { return d.endpoints().snapshot() }

// Create makes the delivery of one source event, if partners see it. It is
// idempotent: the delivery stream is created with "no stream", so a second
// call for the same event (a replay, a Kafka re-delivery) changes nothing.
func (d *Dispatcher) Create(ctx context.Context, rec events.Recorded) error {
	return d.CreateBatch(ctx, []events.Recorded{rec})
}

// CreateBatch makes the deliveries of recs, given in log order, as Create
// does for each: PrepareBatch, then CommitBatches. It returns once every
// delivery is recorded, or with the first error (the caller retries the
// whole batch; Create is idempotent).
func (d *Dispatcher) CreateBatch(ctx context.Context, recs []events.Recorded) error {
	p, err := d.PrepareBatch(ctx, recs)
	if err != nil {
		return err
	}
	return d.CommitBatches(ctx, []PreparedBatch{p})
}

// PreparedBatch is a batch of source events whose deliveries are planned
// and encoded, ready for CommitBatches: preparing reads and waits for the
// read models, so the next batch can prepare while the previous commits.
type PreparedBatch struct {
	created []catalog.DeliveryCreated
	evs     []events.Proposed // evs[i] records created[i]
	// traces is the trace context of the request behind each delivery,
	// by delivery id (nil when none carries one): its events record it, so
	// that every attempt, on whichever node, links to that request.
	traces map[string]string
}

// PrepareBatch plans and encodes the deliveries of recs, given in log
// order (or, from Kafka, in order per subject), writing nothing. Events of a type no webhook renders are passed
// over before decoding (most of the log: registrations' bindings, keys,
// reads). It decides with the app directory as of the events and returns
// once the read models of Reflected reflect them, so a partner who pulls
// the moment the webhook arrives finds what it announces.
func (d *Dispatcher) PrepareBatch(ctx context.Context, recs []events.Recorded) (PreparedBatch, error) {
	type rendered struct {
		rec events.Recorded
		env events.Envelope
		r   Rendered
	}
	var todo []rendered
	var last events.Position
	for _, rec := range recs {
		if !renderedTypes[rec.Type] || !d.Registry.Known(rec.Type) {
			continue
		}
		env, err := d.Registry.Decode(rec)
		if err != nil {
			return PreparedBatch{}, fmt.Errorf("decode %s: %w", rec.ID, err)
		}
		if e, ok := env.Payload.(*catalog.UserErased); ok && d.Sole {
			// The sender keeps no body of a person once erased.
			d.known.forgetSubject("user-" + strconv.FormatInt(e.OpenUserID, 10))
		}
		if r, ok := Render(env, d.Location); ok {
			todo = append(todo, rendered{rec, env, r})
			// The highest, not the last: a Kafka batch is in order per
			// partition only, so its last event need not be its newest.
			if last.Less(rec.Position) {
				last = rec.Position
			}
		}
	}
	if len(todo) == 0 {
		return PreparedBatch{}, nil
	}
	if err := d.AppsReady.WaitFor(ctx, last); err != nil {
		return PreparedBatch{}, err
	}
	if d.Reflected != nil {
		if err := d.Reflected.WaitFor(ctx, last); err != nil {
			return PreparedBatch{}, err
		}
	}
	p := PreparedBatch{created: make([]catalog.DeliveryCreated, 0, len(todo))}
	for _, t := range todo {
		from := len(p.created)
		p.created = d.plan(p.created, t.rec, t.env, t.r)
		if tp := t.env.Metadata.Traceparent; tp != "" {
			if p.traces == nil {
				p.traces = map[string]string{}
			}
			for _, c := range p.created[from:] {
				p.traces[c.DeliveryID] = tp
			}
		}
	}
	p.evs = make([]events.Proposed, len(p.created))
	for i, c := range p.created {
		ev, err := d.encode(c, p.traces[c.DeliveryID])
		if err != nil {
			return PreparedBatch{}, err
		}
		p.evs[i] = ev
	}
	return p, nil
}

// CommitBatches records the deliveries of prepared batches, given in log
// order, as one: in atomic multi-stream appends of at most maxCreateParts
// deliveries, in log order, so they queue (NextAttemptAt, then position)
// in the order their events happened and the store writes few
// transactions. When such an append conflicts (a replay: some already
// exist) or the store has no multi-stream append, subjects (source
// streams) are appended one delivery at a time, concurrently up to
// CreateConcurrency, each subject's in log order, an existing delivery
// left as it is. It returns once every delivery is recorded, or with the
// first error. Deliveries to send are handed to this node's sender as soon
// as they are recorded.
//
// Its appends are deferrable (events.Deferrable): no request waits on a
// creation, so on a node taking calls one at a time a creation rides the
// next call's commit instead of paying one of its own.
func (d *Dispatcher) CommitBatches(ctx context.Context, batches []PreparedBatch) error {
	ctx = events.Deferrable(ctx)
	var all []catalog.DeliveryCreated
	var evs []events.Proposed
	var traces map[string]string
	if len(batches) == 1 {
		all, evs, traces = batches[0].created, batches[0].evs, batches[0].traces
	} else {
		for _, b := range batches {
			all, evs = append(all, b.created...), append(evs, b.evs...)
			if b.traces != nil && traces == nil {
				traces = map[string]string{}
			}
			for id, tp := range b.traces {
				traces[id] = tp
			}
		}
	}
	if len(all) == 0 {
		return nil
	}
	all, evs = distinctDeliveries(all, evs)
	if done, err := d.createAtOnce(ctx, all, evs, traces); done || err != nil {
		return err
	}
	// One chain per subject, in log order.
	var order []string
	chains := map[string][]catalog.DeliveryCreated{}
	for _, c := range all {
		if _, ok := chains[c.SourceStream]; !ok {
			order = append(order, c.SourceStream)
		}
		chains[c.SourceStream] = append(chains[c.SourceStream], c)
	}
	conc := d.CreateConcurrency
	if conc <= 0 {
		conc = DefaultCreateConcurrency
	}
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, stream := range order {
		sem <- struct{}{}
		wg.Add(1)
		go func(chain []catalog.DeliveryCreated) {
			defer wg.Done()
			defer func() { <-sem }()
			for _, c := range chain {
				if err := d.createOne(ctx, c, traces[c.DeliveryID]); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}(chains[stream])
	}
	wg.Wait()
	return first
}

// distinctDeliveries keeps the first of deliveries sharing an id (evs[i]
// records all[i]): a source may hand out one event twice in a batch (the
// relay re-publishes after a crash, so the Kafka topic holds it twice), and
// a multi-stream append refuses a stream named twice, which would fail the
// batch again at every retry and stall its partition.
func distinctDeliveries(all []catalog.DeliveryCreated, evs []events.Proposed) ([]catalog.DeliveryCreated, []events.Proposed) {
	if len(all) < 2 {
		return all, evs
	}
	seen := make(map[string]struct{}, len(all))
	dup := false
	for _, c := range all {
		if _, ok := seen[c.DeliveryID]; ok {
			dup = true
			break
		}
		seen[c.DeliveryID] = struct{}{}
	}
	if !dup {
		return all, evs
	}
	clear(seen)
	outAll, outEvs := make([]catalog.DeliveryCreated, 0, len(all)), make([]events.Proposed, 0, len(evs))
	for i, c := range all {
		if _, ok := seen[c.DeliveryID]; ok {
			continue
		}
		seen[c.DeliveryID] = struct{}{}
		outAll, outEvs = append(outAll, c), append(outEvs, evs[i])
	}
	return outAll, outEvs
}

// renderedTypes are the event types Render may turn into a webhook; the
// creation pass decodes no other event.
var renderedTypes = func() map[string]bool {
	out := map[string]bool{}
	for _, p := range []events.Payload{
		catalog.UserProfileUpdated{}, catalog.FamilyGroupUpserted{}, catalog.FamilyGroupDissolved{},
		catalog.FamilyMemberCreated{}, catalog.FamilyMemberUpdated{}, catalog.FamilyMemberDeleted{},
		catalog.ReportCreated{}, catalog.ReportUpdated{}, catalog.PluginMeasurementRecorded{},
		catalog.PluginMeasurementAnalyzed{}, catalog.OrderShipped{}, catalog.AppWebhookTestRequested{},
		catalog.UserErased{},
		catalog.AppSandboxEventTriggered{},
	} {
		out[p.EventType()] = true
	}
	return out
}()

// plan lists the deliveries of one source event, one per endpoint of the
// app that takes it. The default endpoint's delivery is always recorded,
// as before apps had several endpoints (same id, same bytes): it is also
// the app's feed entry, not sent when the default endpoint has no URL, is
// disabled or does not subscribe. An added endpoint gets one only when it
// is enabled and subscribes, with its own id (EndpointDeliveryID) and body
// (which repeats that id). A test event goes to its endpoint alone. plan
// appends them to out and returns it.
func (d *Dispatcher) plan(out []catalog.DeliveryCreated, rec events.Recorded, env events.Envelope, r Rendered) []catalog.DeliveryCreated {
	created := func(r Rendered, endpointID int64, deliver bool) catalog.DeliveryCreated {
		return catalog.DeliveryCreated{
			DeliveryID: r.id(endpointID, rec.ID), AppID: r.AppID, Event: r.Event,
			SourceEventID: rec.ID, SourceStream: rec.Stream, SourcePosition: rec.Position, SourceRecordedAt: rec.Created,
			Body: string(r.Body), EndpointID: endpointID, Deliver: deliver, DeadLetter: r.DeadLetter,
		}
	}
	app, found := d.Apps.ByID(r.AppID)
	if r.Only {
		ep, ok := app.Endpoint(r.Endpoint)
		return append(out, created(r, r.Endpoint, found && ok && !ep.Disabled))
	}
	def := app.DefaultEndpoint()
	out = append(out, created(r, domain.DefaultEndpointID, found && def.URL != "" && !def.Disabled && Subscribed(def.Events, r.Event)))
	for _, ep := range app.Endpoints {
		if ep.Disabled || !Subscribed(ep.Events, r.Event) {
			continue
		}
		if er, ok := forEndpoint(r, env, d.Location, ep.EndpointID); ok {
			out = append(out, created(er, ep.EndpointID, true))
		}
	}
	return out
}

// encode makes the event that records c, with the trace context of the
// request behind its source event (traceparent, "" for none).
func (d *Dispatcher) encode(c catalog.DeliveryCreated, traceparent string) (events.Proposed, error) {
	return d.Registry.Encode(c, events.Metadata{AppID: c.AppID, Actor: "dispatcher", Traceparent: traceparent, OccurredAt: d.Clock.Now()})
}

// maxCreateParts bounds the streams of one multi-stream append of deliveries.
const maxCreateParts = 1024

// createAtOnce records all (evs[i] records all[i]) in atomic multi-stream
// appends of at most maxCreateParts deliveries each, in order, and hands
// those to send to the sender. done is false, with nothing written by the
// failed append, when one part conflicts (the delivery exists: a replay)
// or the store cannot append to several streams; the caller then creates
// one at a time.
func (d *Dispatcher) createAtOnce(ctx context.Context, all []catalog.DeliveryCreated, evs []events.Proposed, traces map[string]string) (done bool, err error) {
	for len(all) > 0 {
		n := min(len(all), maxCreateParts)
		parts := make([]events.StreamAppend, n)
		for i, c := range all[:n] {
			parts[i] = events.StreamAppend{Stream: domain.DeliveryStream(c.DeliveryID), Expected: events.NoStream(), Events: evs[i : i+1]}
		}
		var known []knownDelivery
		if d.Sole {
			known = make([]knownDelivery, n)
			for i, c := range all[:n] {
				known[i] = d.knownCreated(c, evs[i], traces[c.DeliveryID])
			}
		}
		actx, pre := d.claimWithCreation(ctx, all[:n], evs[:n], traces)
		err := d.appendKnownMany(known, func() error {
			_, err := events.AppendMulti(actx, d.Store, parts...)
			return err
		})
		pres := pre.settle(ctx, d, err)
		if events.IsConflict(err) || errors.Is(err, events.ErrMultiStreamUnsupported) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("create %d deliveries: %w", n, err)
		}
		for _, c := range all[:n] {
			d.handOver(ctx, c, pres[c.DeliveryID])
		}
		all, evs = all[n:], evs[n:]
	}
	return true, nil
}

// creationClaims are the claims an append creating deliveries takes for
// this node's sender (AppendClaims), settled once it returned.
type creationClaims struct {
	claims  []Claim
	taken   func() bool
	created map[string]*preClaimed // by delivery id, all but the claim
}

// claimWithCreation returns the context with which to append the creation
// of cs (evs[i] records cs[i]) so that the append also claims, for this
// node's sender, those of them to send, when the claims can ride an append
// and a sender runs here.
func (d *Dispatcher) claimWithCreation(ctx context.Context, cs []catalog.DeliveryCreated, evs []events.Proposed, traces map[string]string) (context.Context, *creationClaims) {
	ac, ok := d.Claims.(AppendClaims)
	if !ok || !d.handover.accepting() {
		return ctx, nil
	}
	var ids []string
	for _, c := range cs {
		if c.Deliver {
			ids = append(ids, c.DeliveryID)
		}
	}
	if len(ids) == 0 {
		return ctx, nil
	}
	at := time.Now()
	actx, claims, taken := ac.ClaimWithAppend(ctx, d.Node, ids, d.claimTTL())
	if taken == nil {
		return ctx, nil
	}
	p := &creationClaims{claims: claims, taken: taken, created: make(map[string]*preClaimed, len(ids))}
	for i, c := range cs {
		if c.Deliver {
			p.created[c.DeliveryID] = &preClaimed{at: at, del: createdDelivery(c, d.Clock.Now(), traces[c.DeliveryID]),
				subject: createdSubject(c.DeliveryID, evs[i].Data)}
		}
	}
	return actx, p
}

// settle is what the append (err its outcome) claimed, by delivery id.
// Claims an append did not take in full are released: a refused append
// took none, and a commit whose outcome was not learnt may have.
func (p *creationClaims) settle(ctx context.Context, d *Dispatcher, err error) map[string]*preClaimed {
	if p == nil {
		return nil
	}
	if err != nil || !p.taken() {
		if !events.IsConflict(err) && !errors.Is(err, events.ErrMultiStreamUnsupported) {
			d.release(ctx, p.claims)
		}
		return nil
	}
	for _, c := range p.claims {
		p.created[c.DeliveryID].claim = c
	}
	return p.created
}

// createOne appends one delivery; an existing one is left as it is. It
// encodes a new event: one with the prepared event's id would count as a
// replay of a delivery the failed multi-stream append's predecessor
// recorded, and hand it to the sender again.
func (d *Dispatcher) createOne(ctx context.Context, c catalog.DeliveryCreated, traceparent string) error {
	ev, err := d.encode(c, traceparent)
	if err != nil {
		return err
	}
	err = d.appendKnown(d.knownCreated(c, ev, traceparent), func() error {
		_, err := d.Store.Append(ctx, domain.DeliveryStream(c.DeliveryID), events.NoStream(), ev)
		return err
	})
	if events.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create delivery %s: %w", c.DeliveryID, err)
	}
	d.handOver(ctx, c, nil)
	return nil
}

// knownCreated is a delivery to send as its creation (ev, whose data is
// still the plaintext) makes it, for a Sole dispatcher (nil del: nothing to
// keep), so its first attempt need not read it back. Its next attempt time
// is this clock reading, not the event's own (earlier) one: both are past
// by the time an attempt decides.
func (d *Dispatcher) knownCreated(c catalog.DeliveryCreated, ev events.Proposed, traceparent string) knownDelivery {
	if !d.Sole || !c.Deliver {
		return knownDelivery{}
	}
	return knownDelivery{del: createdDelivery(c, d.Clock.Now(), traceparent), subject: createdSubject(c.DeliveryID, ev.Data)}
}

// createdDelivery is the delivery c's creation makes, its first attempt
// due at at.
func createdDelivery(c catalog.DeliveryCreated, at time.Time, traceparent string) *delivery {
	del := &delivery{}
	del.apply(events.Envelope{Payload: &c, Metadata: events.Metadata{OccurredAt: at, Traceparent: traceparent}})
	del.version = 1
	return del
}

func (d *Dispatcher) load(ctx context.Context, id string) (*delivery, error) {
	del, _, err := d.loadSubject(ctx, id)
	return del, err
}

// loadSubject is load with the key subject the delivery's body is sealed
// with (only when the dispatcher keeps what it knows: Sole).
func (d *Dispatcher) loadSubject(ctx context.Context, id string) (*delivery, string, error) {
	recs, err := d.Store.ReadStream(ctx, domain.DeliveryStream(id), 0, 0)
	if err != nil {
		return nil, "", err
	}
	return d.deliveryOf(id, recs)
}

// deliveryOf is the delivery whose stream is recs.
func (d *Dispatcher) deliveryOf(id string, recs []events.Recorded) (*delivery, string, error) {
	del := &delivery{}
	for _, r := range recs {
		// The catalog's direct decoders read the delivery events.
		env, err := d.Registry.Decode(r)
		if err != nil {
			return nil, "", err
		}
		del.apply(env)
	}
	del.version = uint64(len(recs))
	if del.created == nil {
		return nil, "", domain.ErrDeliveryNotFound
	}
	subject := ""
	if d.Sole {
		subject = createdSubject(id, recs[0].Data)
	}
	return del, subject, nil
}

func (d *Dispatcher) append(ctx context.Context, del *delivery, p events.Payload, actor string) (events.Position, error) {
	return d.appendAt(ctx, del, p, actor, d.Clock.Now())
}

// appendAt is append of an event occurred at at.
func (d *Dispatcher) appendAt(ctx context.Context, del *delivery, p events.Payload, actor string, at time.Time) (events.Position, error) {
	meta := events.Metadata{AppID: del.created.AppID, Actor: actor, OccurredAt: at}
	ev, err := d.Registry.Encode(p, meta)
	if err != nil {
		return events.Position{}, err
	}
	res, err := d.Store.Append(ctx, domain.DeliveryStream(del.created.DeliveryID), events.AfterVersion(del.version), ev)
	return res.Position, err
}

// endpointURL is where a delivery to the endpoint of app goes ("" when the
// endpoint is gone or disabled), the URL its breaker is kept for.
func endpointURL(app domain.App, endpointID int64) string {
	ep, ok := app.Endpoint(endpointID)
	if !ok || ep.Disabled {
		return ""
	}
	return ep.URL
}

func (d *Dispatcher) claimTTL() time.Duration {
	if d.ClaimTTL > 0 {
		return d.ClaimTTL
	}
	return DefaultClaimTTL
}

// paused reports whether an app's webhooks wait because it is suspended.
func (d *Dispatcher) paused(appID int64) bool {
	app, ok := d.Apps.ByID(appID)
	return ok && app.Suspended
}

// attempt posts one delivery and records the outcome as an event. The
// caller holds the delivery's claim, taken at claimedAt: loading and posting
// end before the claim could lapse, so no other node can start an attempt
// of the delivery while this one's POST is open. The endpoint slot c holds
// is given back as soon as the POST ends, telling the breaker its outcome,
// and freed is called then (it wakes the sender; a Sole sender's also gives
// the worker back, see launch): the endpoint may take its next delivery
// while this one's outcome is still being recorded (one endpoint's
// throughput is PerEndpoint POSTs at a time, not PerEndpoint attempts).
//
// freeWorker is called once the outcome is appended: waiting for the
// deliveries projection to reflect it (so a scan does not list it again;
// the caller keeps it marked as attempting until then) holds no worker.
//
// released reports that the outcome's append also released the claim
// (AppendClaims): every claimer reads a delivery's stream after taking its
// claim, so the one that takes it next finds the outcome. recorded reports
// that the outcome was appended.
func (d *Dispatcher) attempt(ctx context.Context, eps *breakers, c claimed, claimedAt time.Time, freed, freeWorker func()) (released, recorded bool) {
	slot := true
	defer func() {
		if slot {
			eps.cancel(c.ep, c.url, c.probe)
		}
	}()
	id := c.DeliveryID
	// Built only when there is something to log: slog's With copies and
	// formats its attributes, a cost every attempt paid (profile of
	// BenchmarkWebhookDrain) though most log nothing.
	log := func() *slog.Logger { return d.Log.With("delivery_id", id) }
	if ctx.Err() != nil {
		return // stopping: start nothing new
	}
	var (
		outcome, class string
		attemptNo      int
		status         int
	)
	ctx, span := startAttempt(ctx, id)
	defer func() { endAttempt(span, attemptNo, outcome, class, status) }()
	// Measured on this node's monotonic clock from before the claim was
	// taken, the budget ends before the claim lapses on the claims' clock.
	// A stopping node lets an attempt it started finish within the budget
	// and records it, rather than cut a POST the receiver may already have
	// taken, which the next node would then send again.
	base := context.WithoutCancel(ctx)
	actx, cancel := context.WithDeadline(base, claimedAt.Add(AttemptBudget(d.claimTTL())))
	defer cancel()
	del, subject, known, err := d.loadClaimed(actx, c)
	if err != nil {
		log().Error("load delivery", "err", err)
		return
	}
	now := d.Clock.Now()
	paused := d.paused(del.created.AppID)
	if err := decideSend(del, now, paused); err != nil && known && !errors.Is(err, errAppSuspended) {
		// What the dispatcher knew says not to send: the stream decides.
		d.known.forget(id)
		if del, subject, err = d.loadSubject(actx, id); err != nil {
			log().Error("load delivery", "err", err)
			return
		}
	}
	describeAttempt(span, del)
	if decideSend(del, now, paused) != nil {
		return // not due after all, its app suspended or its body erased since it was listed
	}
	r := d.post(actx, del)
	cancel()
	slot = false
	eps.done(c.ep, c.url, c.probe, endpointFailed(r), d.Clock.Now())
	freed()
	r.at = now
	ev, err := decideAttempt(del, r, d.Schedule)
	if err != nil {
		log().Error("decide attempt", "err", err)
		return
	}
	outcome, class, attemptNo, status = ev.Outcome, ev.ErrorClass, ev.Attempt, ev.StatusCode
	// Nobody waits on an attempt's outcome in a request: it may ride
	// another append's commit (events.Deferrable).
	rctx, rcancel := context.WithTimeout(events.Deferrable(base), 10*time.Second)
	defer rcancel()
	at := d.Clock.Now()
	actx, gone := rctx, func() bool { return false }
	if ac, ok := d.Claims.(AppendClaims); ok {
		if rctx2, r := ac.ReleaseWithAppend(rctx, []Claim{c.Claim}); r != nil {
			actx, gone = rctx2, r
		}
	}
	var pos events.Position
	err = d.appendKnown(d.knownAfter(del, &ev, at, subject), func() (err error) {
		// &ev: ev lives on the heap already (knownAfter keeps it), and
		// the value would be copied again into the Payload interface.
		pos, err = d.appendAt(actx, del, &ev, "dispatcher", at)
		return err
	})
	if events.IsConflict(err) {
		// Another node recorded an attempt first, or a resend moved the
		// delivery: that record stands (what was known of the delivery
		// is withdrawn, so its next attempt loads it).
		return
	}
	if err != nil {
		log().Error("record attempt", "err", err)
		return
	}
	released, recorded = gone(), true
	if ev.Outcome != domain.OutcomeDelivered {
		log().Warn("webhook attempt failed", "event", del.created.Event, "attempt", ev.Attempt, "outcome", ev.Outcome, "status", ev.StatusCode, "error_class", ev.ErrorClass, "error", ev.Error)
	}
	freeWorker()
	if d.OnAttempt != nil {
		var first *time.Duration
		if ev.Attempt == 1 {
			delay := time.Since(del.created.SourceRecordedAt)
			first = &delay
		}
		d.OnAttempt(del.created.Event, ev.Outcome, first)
	}
	// The wait for the projection (so the next Due does not pick it
	// again) ends with the record's deadline, which is near the claim's
	// lapse, after which holding the delivery protects nothing, or when
	// the node stops; sharing that deadline spares an attempt a timer.
	stop := context.AfterFunc(ctx, rcancel)
	defer stop()
	_ = d.Projected.WaitFor(rctx, pos)
	return released, recorded
}

// endpointFailed says whether a POST's result counts against its
// endpoint's breaker: it timed out, could not connect, or the endpoint
// answered 5xx or 429. A target the guard refuses, an app without a URL
// and other 4xx answers are fast and hold nobody up.
func endpointFailed(r result) bool {
	if r.err != "" {
		return !r.refused && r.class != domain.ErrorClassNoURL && r.class != domain.ErrorClassInvalidURL
	}
	return r.statusCode >= 500 || r.statusCode == http.StatusTooManyRequests
}

// post sends the fixed body with a fresh timestamp and signature.
func (d *Dispatcher) post(ctx context.Context, del *delivery) result {
	app, ok := d.Apps.ByID(del.created.AppID)
	ep, found := app.Endpoint(del.created.EndpointID)
	switch {
	case !ok || !found:
		msg := "the app has no webhook URL configured"
		if del.created.EndpointID != domain.DefaultEndpointID {
			msg = "the webhook endpoint was removed"
		}
		return result{err: msg, class: domain.ErrorClassNoURL}
	case ep.Disabled:
		return result{url: ep.URL, err: "the webhook endpoint is disabled", class: domain.ErrorClassNoURL}
	}
	// The body is only read (signed, written to the connection): a view
	// of the stored string, not a copy per POST.
	body := unsafe.Slice(unsafe.StringData(del.created.Body), len(del.created.Body))
	direct := d.direct(ep.URL)
	var deadline time.Time
	if direct {
		// ctx's deadline (the attempt's budget) is the POST's own, not a
		// parent's: see postContext.
		budget, _ := ctx.Deadline()
		var cancel context.CancelFunc
		ctx, deadline, cancel = postContext(context.WithoutCancel(ctx), budget, d.Client.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return result{url: ep.URL, err: "invalid webhook URL: " + err.Error(), class: domain.ErrorClassInvalidURL, refused: true}
	}
	ts, sig := d.signers.sign(ep.Secret, time.Now().Unix(), body)
	req.Header = attemptHeader(del.created.DeliveryID, del.created.Event, ts, sig)
	_, span := startPost(ctx, ep.URL)
	start := time.Now()
	var res *http.Response
	if direct {
		res, err = roundTrip(d.Client.Transport, req, deadline)
	} else {
		res, err = d.Client.Do(req)
	}
	r := result{url: ep.URL, latency: time.Since(start)}
	if err != nil {
		r.err, r.class = err.Error(), classify(err)
		r.refused = errors.Is(err, targets.ErrRefused)
		endPost(span, r)
		return r
	}
	if res.ContentLength != 0 { // an empty answer has no excerpt to keep
		r.excerpt = readExcerpt(res.Body)
	}
	res.Body.Close()
	r.statusCode = res.StatusCode
	endPost(span, r)
	return r
}

// attemptHeader is a POST's headers, written as the map Header.Set would
// make (canonical keys, one value each) in three allocations rather than
// one per header and the map's growth.
func attemptHeader(id, event, timestamp, signature string) http.Header {
	v := []string{"application/json", "partner-open-platform-webhooks/1", id, event, timestamp, signature}
	return http.Header{
		"Content-Type":        v[0:1:1],
		"User-Agent":          v[1:2:2],
		"X-Webhook-Id":        v[2:3:3],
		"X-Webhook-Event":     v[3:4:4],
		"X-Webhook-Timestamp": v[4:5:5],
		"X-Webhook-Signature": v[5:6:6],
	}
}

// Resend queues a delivery again; appID 0 lets an operator resend any app's.
func (d *Dispatcher) Resend(ctx context.Context, appID int64, id, by string) (events.Position, error) {
	for attempt := 0; attempt < 10; attempt++ {
		del, subject, err := d.loadSubject(ctx, id)
		if err != nil {
			return events.Position{}, err
		}
		now := d.Clock.Now()
		ev, err := decideResend(del, appID, by, now)
		if err != nil || ev == nil {
			return events.Position{}, err
		}
		var pos events.Position
		err = d.appendKnown(d.knownAfter(del, ev, now, subject), func() (err error) {
			pos, err = d.appendAt(ctx, del, ev, by, now)
			return err
		})
		if events.IsConflict(err) {
			continue
		}
		return pos, err
	}
	return events.Position{}, fmt.Errorf("resend %s: too many concurrent changes", id)
}

// readExcerpt drains up to 64 KiB of a receiver's answer (so the
// connection can be reused) and keeps its start, at most
// catalog.ExcerptBytes, cut at a character boundary.
func readExcerpt(body io.Reader) string {
	head := excerptBufs.Get().(*[catalog.ExcerptBytes + utf8.UTFMax]byte)
	defer excerptBufs.Put(head)
	n, _ := io.ReadFull(body, head[:])
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	return excerpt(head[:n])
}

// excerptBufs are readExcerpt's buffers: excerpt copies what it keeps.
var excerptBufs = sync.Pool{New: func() any { return new([catalog.ExcerptBytes + utf8.UTFMax]byte) }}

// excerpt is the start of b, at most catalog.ExcerptBytes of valid UTF-8
// (invalid bytes and NULs become "?", so any answer can be stored).
func excerpt(b []byte) string {
	s := strings.ToValidUTF8(strings.ReplaceAll(string(b), "\x00", "?"), "?")
	if len(s) <= catalog.ExcerptBytes {
		return s
	}
	cut := catalog.ExcerptBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// DefaultCreateConcurrency is CreateConcurrency when it is zero.
const DefaultCreateConcurrency = 64

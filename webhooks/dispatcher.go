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
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/webhooks/targets"
)

// Clock lets tests move time through the retry schedule.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now is time.Now.
func (SystemClock) Now() time.Time { return time.Now() }

// After is time.After.
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

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

// Dispatcher creates deliveries from the log and sends them.
type Dispatcher struct {
	Store      events.Store
	Registry   *events.Registry
	Apps       Apps
	AppsReady  *projections.Runner // the directory must have seen an event's position before it decides
	Deliveries projections.DeliveryStore
	Projected  *projections.Runner // the deliveries projection
	// Reflected waits until every read model a partner may read after a
	// webhook reflects the event (nil: only the deliveries projection).
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
}

// Create makes the delivery of one source event, if partners see it. It is
// idempotent: the delivery stream is created with "no stream", so a second
// call for the same event (a replay, a Kafka re-delivery) changes nothing.
func (d *Dispatcher) Create(ctx context.Context, rec events.Recorded) error {
	if !d.Registry.Known(rec.Type) {
		return nil
	}
	env, err := d.Registry.Decode(rec)
	if err != nil {
		return fmt.Errorf("decode %s: %w", rec.ID, err)
	}
	r, ok := Render(env, d.Location)
	if !ok {
		return nil
	}
	// Decide with the app directory as of the event, and send only once
	// this node's read models reflect it, so a partner who pulls the moment
	// the webhook arrives finds what it announces.
	if err := d.AppsReady.WaitFor(ctx, rec.Position); err != nil {
		return err
	}
	var reflected interface {
		WaitFor(context.Context, events.Position) error
	} = d.Projected
	if d.Reflected != nil {
		reflected = d.Reflected
	}
	if err := reflected.WaitFor(ctx, rec.Position); err != nil {
		return err
	}
	app, found := d.Apps.ByID(r.AppID)
	created := catalog.DeliveryCreated{
		DeliveryID: DeliveryID(r.AppID, rec.ID), AppID: r.AppID, Event: r.Event,
		SourceEventID: rec.ID, SourceStream: rec.Stream, SourcePosition: rec.Position, SourceRecordedAt: rec.Created,
		Body: string(r.Body), Deliver: found && app.WebhookURL != "" && Subscribed(app.WebhookEvents, r.Event), DeadLetter: r.DeadLetter,
	}
	ev, err := d.Registry.Encode(created, events.Metadata{AppID: r.AppID, Actor: "dispatcher", OccurredAt: d.Clock.Now()})
	if err != nil {
		return err
	}
	_, err = d.Store.Append(ctx, domain.DeliveryStream(created.DeliveryID), events.NoStream(), ev)
	if events.IsConflict(err) {
		return nil
	}
	return err
}

func (d *Dispatcher) load(ctx context.Context, id string) (*delivery, error) {
	recs, err := d.Store.ReadStream(ctx, domain.DeliveryStream(id), 0, 0)
	if err != nil {
		return nil, err
	}
	del := &delivery{}
	for _, r := range recs {
		env, err := d.Registry.Decode(r)
		if err != nil {
			return nil, err
		}
		del.apply(env)
	}
	del.version = uint64(len(recs))
	if del.created == nil {
		return nil, domain.ErrDeliveryNotFound
	}
	return del, nil
}

func (d *Dispatcher) append(ctx context.Context, del *delivery, p events.Payload, actor string) (events.Position, error) {
	ev, err := d.Registry.Encode(p, events.Metadata{AppID: del.created.AppID, Actor: actor, OccurredAt: d.Clock.Now()})
	if err != nil {
		return events.Position{}, err
	}
	res, err := d.Store.Append(ctx, domain.DeliveryStream(del.created.DeliveryID), events.AfterVersion(del.version), ev)
	return res.Position, err
}

// RunSender attempts due deliveries until ctx ends, at most Workers at once.
// Each attempt runs under a claim (see Claims), so nodes sharing the
// deliveries take disjoint shares of the due work and never overlap two
// attempts of one delivery.
func (d *Dispatcher) RunSender(ctx context.Context) error {
	if d.Claims == nil {
		return errors.New("webhooks: the sender needs Claims")
	}
	// After a restart the delivery read model may catch up before the app
	// directory; an attempt then would not find the app's URL and secret
	// and would burn a retry. Start once the directory has caught up.
	if err := d.AppsReady.WaitReady(ctx); err != nil {
		return nil
	}
	workers := max(d.Workers, 1)
	sem := make(chan struct{}, workers)
	kick := make(chan struct{}, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		changed, appsChanged := d.Projected.Changed(), d.AppsReady.Changed()
		now := d.Clock.Now()
		// Only this loop fills sem, so this many slots stay free below.
		free := workers - len(sem)
		var claimed []Claim
		var claimedAt time.Time
		var held bool
		if free > 0 {
			var err error
			claimedAt = time.Now()
			claimed, held, err = d.claimDue(ctx, now, free)
			if err != nil && ctx.Err() == nil {
				d.Log.Error("claim due deliveries", "err", err)
			}
		}
		if !held {
			appsChanged = nil // only a held delivery waits for the directory
		}
		for _, c := range claimed {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				d.attempt(ctx, c.DeliveryID, claimedAt)
				// Released even when ctx has ended: otherwise the delivery
				// would wait for the claim to lapse on every other node.
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				if err := d.Claims.Release(rctx, []Claim{c}); err != nil {
					d.Log.Warn("release delivery claim; it lapses by itself", "delivery_id", c.DeliveryID, "err", err)
				}
				cancel()
				<-sem
				select {
				case kick <- struct{}{}:
				default:
				}
			}()
		}
		if ctx.Err() != nil {
			return nil
		}
		wait := time.Second
		if next, ok, err := d.Deliveries.NextDue(ctx); err == nil && ok && next.After(now) && next.Sub(now) < wait {
			wait = next.Sub(now)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.Clock.After(wait):
		case <-changed:
		case <-appsChanged: // a resumed app's deliveries are due at once
		case <-kick:
		}
	}
}

// maxDueScan bounds how many due deliveries one pass looks through to find
// sendable ones behind those of suspended apps and those other nodes hold.
const maxDueScan = 4096

// claimDue claims up to n due deliveries that may be attempted now: those
// of a suspended app are held (pending or retrying, no attempt recorded, no
// retry used) until it is resumed, and held says some were; those another
// node (or this one) has claimed are skipped. Held and claimed rows stay
// first in the due order, so the scan widens past them, up to maxDueScan rows.
func (d *Dispatcher) claimDue(ctx context.Context, now time.Time, n int) (out []Claim, held bool, err error) {
	ttl := d.claimTTL()
	tried := map[string]bool{}
	ask := n // candidates per Claim call; grows while others hold the head of the queue
	for limit := 4 * n; ; limit *= 4 {
		rows, err := d.Deliveries.Due(ctx, now, limit)
		if err != nil {
			return out, held, err
		}
		var candidates []string
		for _, del := range rows {
			if d.paused(del.AppID) {
				held = true
			} else if !tried[del.DeliveryID] {
				tried[del.DeliveryID] = true
				candidates = append(candidates, del.DeliveryID)
			}
		}
		for len(candidates) > 0 && len(out) < n {
			batch := candidates[:min(ask, len(candidates))]
			candidates = candidates[len(batch):]
			got, err := d.Claims.Claim(ctx, d.Node, batch, ttl)
			if err != nil {
				return out, held, err
			}
			if keep := n - len(out); len(got) > keep {
				// Asked widely and took more than the free workers:
				// give the rest back to the other nodes at once.
				if err := d.Claims.Release(ctx, got[keep:]); err != nil {
					d.Log.Warn("release surplus claims; they lapse by themselves", "err", err)
				}
				got = got[:keep]
			}
			out = append(out, got...)
			if 2*len(got) < len(batch) {
				ask = min(2*ask, maxDueScan)
			}
		}
		if len(out) == n || len(rows) < limit || limit >= maxDueScan {
			return out, held, nil
		}
	}
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
// of the delivery while this one's POST is open.
func (d *Dispatcher) attempt(ctx context.Context, id string, claimedAt time.Time) {
	log := d.Log.With("delivery_id", id)
	if ctx.Err() != nil {
		return // stopping: start nothing new
	}
	// Measured on this node's monotonic clock from before the claim was
	// taken, the budget ends before the claim lapses on the claims' clock.
	// A stopping node lets an attempt it started finish within the budget
	// and records it, rather than cut a POST the receiver may already have
	// taken, which the next node would then send again.
	actx, cancel := context.WithDeadline(context.WithoutCancel(ctx), claimedAt.Add(attemptBudget(d.claimTTL())))
	defer cancel()
	del, err := d.load(actx, id)
	if err != nil {
		log.Error("load delivery", "err", err)
		return
	}
	now := d.Clock.Now()
	if !del.due(now) {
		return // the read model was behind the stream
	}
	if d.paused(del.created.AppID) {
		return // suspended since it was listed; it waits for the resume
	}
	if del.created.Body == "" {
		// Its user was erased since it was listed: the body reads as null and
		// the read model has abandoned it (projections.stopErased); never send.
		return
	}
	r := d.post(actx, del)
	cancel()
	r.at = now
	ev := decideAttempt(del, r, d.Schedule)
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer rcancel()
	pos, err := d.append(rctx, del, ev, "dispatcher")
	if events.IsConflict(err) {
		return // another node recorded an attempt first; its record stands
	}
	if err != nil {
		log.Error("record attempt", "err", err)
		return
	}
	if ev.Outcome != domain.OutcomeDelivered {
		log.Warn("webhook attempt failed", "event", del.created.Event, "attempt", ev.Attempt, "outcome", ev.Outcome, "status", ev.StatusCode, "error_class", ev.ErrorClass, "error", ev.Error)
	}
	if d.OnAttempt != nil {
		var first *time.Duration
		if ev.Attempt == 1 {
			delay := time.Since(del.created.SourceRecordedAt)
			first = &delay
		}
		d.OnAttempt(del.created.Event, ev.Outcome, first)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = d.Projected.WaitFor(wctx, pos) // so the next Due does not pick it again
}

// post sends the fixed body with a fresh timestamp and signature.
func (d *Dispatcher) post(ctx context.Context, del *delivery) result {
	app, ok := d.Apps.ByID(del.created.AppID)
	if !ok || app.WebhookURL == "" {
		return result{err: "the app has no webhook URL configured", class: domain.ErrorClassNoURL}
	}
	body := []byte(del.created.Body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, app.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return result{url: app.WebhookURL, err: "invalid webhook URL: " + err.Error(), class: domain.ErrorClassInvalidURL, refused: true}
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "partner-open-platform-webhooks/1")
	req.Header.Set("X-Webhook-Id", del.created.DeliveryID)
	req.Header.Set("X-Webhook-Event", del.created.Event)
	req.Header.Set("X-Webhook-Timestamp", ts)
	req.Header.Set("X-Webhook-Signature", Sign(app.WebhookSecret, ts, body))
	start := time.Now()
	res, err := d.Client.Do(req)
	r := result{url: app.WebhookURL, latency: time.Since(start)}
	if err != nil {
		r.err, r.class = err.Error(), classify(err)
		r.refused = errors.Is(err, targets.ErrRefused)
		return r
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	r.statusCode = res.StatusCode
	return r
}

// Resend queues a delivery again; appID 0 lets an operator resend any app's.
func (d *Dispatcher) Resend(ctx context.Context, appID int64, id, by string) (events.Position, error) {
	for attempt := 0; attempt < 10; attempt++ {
		del, err := d.load(ctx, id)
		if err != nil {
			return events.Position{}, err
		}
		if appID != 0 && del.created.AppID != appID {
			return events.Position{}, domain.ErrDeliveryNotFound
		}
		ev, err := decideResend(del, by, d.Clock.Now())
		if err != nil || ev == nil {
			return events.Position{}, err
		}
		pos, err := d.append(ctx, del, *ev, by)
		if events.IsConflict(err) {
			continue
		}
		return pos, err
	}
	return events.Position{}, fmt.Errorf("resend %s: too many concurrent changes", id)
}

// ResendMatching resends every delivery the filter selects and says how many it queued.
func (d *Dispatcher) ResendMatching(ctx context.Context, f domain.DeliveryFilter, by string) (int, events.Position, error) {
	n := 0
	var last events.Position
	f.Limit = 500
	for {
		page, err := d.Deliveries.Deliveries(ctx, f)
		if err != nil {
			return n, last, err
		}
		for _, del := range page {
			pos, err := d.Resend(ctx, f.AppID, del.DeliveryID, by)
			if err != nil {
				return n, last, err
			}
			if !pos.IsZero() {
				n++
				last = pos
			}
		}
		if len(page) < f.Limit {
			return n, last, nil
		}
		f.After = page[len(page)-1].Cursor
	}
}

// StoreSource feeds the dispatcher straight from the event store, resuming
// after the last source event that already has a delivery.
type StoreSource struct {
	Store events.Store
	From  func(ctx context.Context) (events.Position, error)
}

// Run implements Source.
func (s StoreSource) Run(ctx context.Context, handle func(context.Context, events.Recorded) error) error {
	from, err := s.From(ctx)
	if err != nil {
		return err
	}
	sub, err := s.Store.SubscribeAll(ctx, from)
	if err != nil {
		return err
	}
	defer sub.Close()
	for {
		rec, err := sub.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if err := handle(ctx, rec); err != nil {
			return err
		}
	}
}

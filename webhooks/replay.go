package webhooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/subscribe"
)

// Replay defaults: how many of one replay's deliveries wait in the queue at
// once, how many it queues per second, and how many replays run at once.
const (
	DefaultReplayWindow     = 8
	DefaultReplayRate       = 50
	DefaultReplayConcurrent = 2
)

// ReplayRun is a replay as its runner reads it from its stream.
type ReplayRun struct {
	Request catalog.WebhookReplayRequested
	Running bool
	// Counts are the last checkpoint's (Position: the log position reached).
	Counts domain.ReplayCounts
}

// ReplayBook is where replays are recorded (the replay commands): the
// runner reads a replay and records its checkpoints and its completion,
// getting domain.ErrReplayStopped once the replay was canceled.
type ReplayBook interface {
	Replay(ctx context.Context, id int64) (ReplayRun, error)
	Checkpoint(ctx context.Context, id int64, c domain.ReplayCounts, done bool) error
}

// Replayer delivers replays: the app's past events of the chosen types,
// between the replay's start and end points of the log, to one endpoint,
// each under the delivery id a delivery of that event to that endpoint has
// (EndpointDeliveryID): an existing delivery is queued again as a resend,
// with its recorded body (an erased person's is never sent again), and one
// that never existed (the endpoint was added later, or did not subscribe)
// is created. Live traffic keeps priority: a replay keeps at most Window of
// its deliveries waiting in the queue and queues the next only when those
// were attempted, at most Rate per second, so a live delivery waits behind
// at most Window of a replay's. Every handled window is a checkpoint in the
// replay's stream; a replay resumed on any node (after a restart, or a
// lease moving) goes on from it, queuing again at most one window under the
// same delivery ids.
type Replayer struct {
	D    *Dispatcher
	Book ReplayBook
	// Window, Rate and Concurrent default to DefaultReplayWindow,
	// DefaultReplayRate and DefaultReplayConcurrent.
	Window     int
	Rate       float64
	Concurrent int
	Log        *slog.Logger
	// OnQueued observes each delivery a replay queues (tests).
	OnQueued func(replayID int64, deliveryID string)
	// Checkpoints, when set, keeps how far the log's replay events were
	// handled, held before the request of every replay still open, so a
	// start reads the log from there instead of from its beginning (an
	// embedded log reads every event to find the few replay events). For a
	// log whose positions are sequence numbers (Commit == Prepare).
	Checkpoints subscribe.Checkpoints
}

func (r *Replayer) window() int {
	if r.Window > 0 {
		return r.Window
	}
	return DefaultReplayWindow
}

func (r *Replayer) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// replayTypes are the events that open and end replays.
var replayTypes = map[string]bool{
	catalog.WebhookReplayRequested{}.EventType(): true,
	catalog.WebhookReplayCompleted{}.EventType(): true,
	catalog.WebhookReplayCanceled{}.EventType():  true,
}

// replaySignal is a replay opened (start) or ended, at its event's position.
type replaySignal struct {
	id    int64
	start bool
	at    events.Position
}

// Run follows the log for replays and runs each until it ends, at most
// Concurrent at once, until ctx ends. It is meant to run on one node at a
// time (under a lease): every start reads the log's replay events from its
// beginning, or from Checkpoints (which is never past an open replay's
// request), so a replay that was running anywhere is resumed here.
func (r *Replayer) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &replayScheduler{r: r, ctx: ctx, running: map[int64]context.CancelFunc{}, ended: map[int64]bool{}, open: map[int64]events.Position{}}
	conc := r.Concurrent
	if conc <= 0 {
		conc = DefaultReplayConcurrent
	}
	s.slots = make(chan struct{}, conc)
	defer s.wg.Wait()
	p := subscribe.Pipeline[[]replaySignal]{
		Name:   "webhook replays",
		Source: subscribe.StoreSource{Store: r.D.Store, Wants: func(t string) bool { return replayTypes[t] }, Checkpoints: s.checkpoints()},
		Log:    r.Log,
		Prepare: func(_ context.Context, recs []events.Recorded) ([]replaySignal, error) {
			var out []replaySignal
			for _, rec := range recs {
				if !replayTypes[rec.Type] {
					continue
				}
				env, err := r.D.Registry.Decode(rec)
				if err != nil {
					return nil, err
				}
				switch p := env.Payload.(type) {
				case *catalog.WebhookReplayRequested:
					out = append(out, replaySignal{p.ReplayID, true, rec.Position})
				case *catalog.WebhookReplayCompleted:
					out = append(out, replaySignal{p.ReplayID, false, rec.Position})
				case *catalog.WebhookReplayCanceled:
					out = append(out, replaySignal{p.ReplayID, false, rec.Position})
				}
			}
			return out, nil
		},
		Commit: func(_ context.Context, batches [][]replaySignal) error {
			for _, b := range batches {
				for _, sig := range b {
					s.signal(sig)
				}
			}
			return nil
		},
	}
	return p.Run(ctx)
}

// replayScheduler starts replays as they are requested and stops them as
// they end.
type replayScheduler struct {
	r       *Replayer
	ctx     context.Context
	slots   chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	running map[int64]context.CancelFunc
	ended   map[int64]bool
	// open holds the request position of every replay requested and not
	// yet ended in the log: the saved checkpoint stays before them all.
	open map[int64]events.Position
}

// checkpoints is r.Checkpoints held before every open replay's request.
func (s *replayScheduler) checkpoints() subscribe.Checkpoints {
	if s.r.Checkpoints == nil {
		return nil
	}
	return heldCheckpoints{s}
}

// heldCheckpoints saves a committed position, or the one just before the
// earliest open replay's request if that is earlier.
type heldCheckpoints struct{ s *replayScheduler }

func (h heldCheckpoints) Load(ctx context.Context) (events.Position, error) {
	return h.s.r.Checkpoints.Load(ctx)
}

func (h heldCheckpoints) Save(ctx context.Context, pos events.Position) error {
	h.s.mu.Lock()
	for _, at := range h.s.open {
		if at.Commit != at.Prepare || at.Commit == 0 {
			h.s.mu.Unlock()
			return nil // no position just before it to hold at
		}
		if before := (events.Position{Commit: at.Commit - 1, Prepare: at.Commit - 1}); before.Less(pos) {
			pos = before
		}
	}
	h.s.mu.Unlock()
	if pos.IsZero() {
		return nil
	}
	return h.s.r.Checkpoints.Save(ctx, pos)
}

func (s *replayScheduler) signal(sig replaySignal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !sig.start {
		s.ended[sig.id] = true
		delete(s.open, sig.id)
		if stop := s.running[sig.id]; stop != nil {
			stop()
		}
		return
	}
	if s.ended[sig.id] {
		return
	}
	if _, ok := s.open[sig.id]; !ok {
		s.open[sig.id] = sig.at
	}
	if s.running[sig.id] != nil {
		return
	}
	ctx, stop := context.WithCancel(s.ctx)
	s.running[sig.id] = stop
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.running, sig.id)
			s.mu.Unlock()
			stop()
		}()
		select {
		case s.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-s.slots }()
		for ctx.Err() == nil {
			err := s.r.runOne(ctx, sig.id)
			if err == nil || ctx.Err() != nil {
				return
			}
			s.r.log().Warn("webhook replay failed; retrying", "replay_id", sig.id, "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
}

// replayItem is one event a replay delivers again.
type replayItem struct {
	created catalog.DeliveryCreated
	pos     events.Position
}

// replayBatch is what a replay selected from one batch of the log.
type replayBatch struct {
	items []replayItem
	last  events.Position
}

// runOne runs one replay from its checkpoint to its end, and records its
// completion; nil also when it was canceled.
func (r *Replayer) runOne(ctx context.Context, id int64) error {
	run, err := r.Book.Replay(ctx, id)
	if err != nil {
		return err
	}
	if !run.Running {
		return nil
	}
	req, counts := run.Request, run.Counts
	if counts.Position.Less(req.After) {
		counts.Position = req.After
	}
	p := subscribe.Pipeline[replayBatch]{
		Name: "webhook replay " + strconv.FormatInt(id, 10),
		Source: subscribe.RangeSource{Store: r.D.Store, Until: req.Until,
			From: func(context.Context) (events.Position, error) { return counts.Position, nil }},
		Log: r.Log,
		Prepare: func(ctx context.Context, recs []events.Recorded) (replayBatch, error) {
			return r.D.selectReplay(req, recs)
		},
		Commit: func(ctx context.Context, bs []replayBatch) error {
			for _, b := range bs {
				if err := r.deliverBatch(ctx, req, &counts, b); err != nil {
					return err
				}
			}
			return nil
		},
	}
	err = p.Run(ctx)
	switch {
	case ctx.Err() != nil, errors.Is(err, domain.ErrReplayStopped):
		return nil
	case err != nil:
		return err
	}
	counts.Position = maxPosition(counts.Position, req.Until)
	if err := r.Book.Checkpoint(ctx, id, counts, true); err != nil && !errors.Is(err, domain.ErrReplayStopped) {
		return err
	}
	r.log().Info("webhook replay completed", "replay_id", id, "matched", counts.Matched, "queued", counts.Queued, "delivered", counts.Delivered, "erased", counts.Erased)
	return nil
}

// selectReplay picks from recs the events req delivers again, in log
// order, each with the delivery a delivery of it to req's endpoint has.
func (d *Dispatcher) selectReplay(req catalog.WebhookReplayRequested, recs []events.Recorded) (replayBatch, error) {
	b := replayBatch{}
	if len(recs) > 0 {
		b.last = recs[len(recs)-1].Position
	}
	for _, rec := range recs {
		if !renderedTypes[rec.Type] || !d.Registry.Known(rec.Type) || rec.Position.Less(req.From) {
			continue
		}
		env, err := d.Registry.Decode(rec)
		if err != nil {
			return replayBatch{}, fmt.Errorf("decode %s: %w", rec.ID, err)
		}
		if !replayWants(req, env.Metadata.OccurredAt) {
			continue
		}
		er, ok := RenderFor(env, d.Location, req.EndpointID)
		if !ok || er.Only || er.AppID != req.AppID || !Subscribed(req.Events, er.Event) {
			continue
		}
		b.items = append(b.items, replayItem{pos: rec.Position, created: catalog.DeliveryCreated{
			DeliveryID: er.id(req.EndpointID, rec.ID), AppID: er.AppID, Event: er.Event,
			SourceEventID: rec.ID, SourceStream: rec.Stream, SourcePosition: rec.Position, SourceRecordedAt: rec.Created,
			Body: string(er.Body), EndpointID: req.EndpointID, Deliver: true, DeadLetter: er.DeadLetter,
		}})
	}
	return b, nil
}

// replayWants says whether an event that occurred at `at` lies in req's
// time range (since, until; each when given).
func replayWants(req catalog.WebhookReplayRequested, at time.Time) bool {
	if req.Since != nil && at.Before(*req.Since) {
		return false
	}
	return req.Before == nil || !at.After(*req.Before)
}

// deliverBatch queues b's deliveries a window at a time, waits for each
// window to be attempted, and records a checkpoint after each.
func (r *Replayer) deliverBatch(ctx context.Context, req catalog.WebhookReplayRequested, counts *domain.ReplayCounts, b replayBatch) error {
	w := r.window()
	by := "replay:" + strconv.FormatInt(req.ReplayID, 10)
	for start := 0; start < len(b.items); start += w {
		win := b.items[start:min(start+w, len(b.items))]
		// A cancel lands between windows: nothing more is queued after it
		// is seen (the window being queued when it lands still goes).
		if run, err := r.Book.Replay(ctx, req.ReplayID); err != nil {
			return err
		} else if !run.Running {
			return domain.ErrReplayStopped
		}
		var waiting []string
		for _, it := range win {
			if err := r.pace(ctx); err != nil {
				return err
			}
			counts.Matched++
			queued, err := r.D.replayOne(ctx, it.created, by)
			switch {
			case err != nil:
				return err
			case !queued:
				counts.Erased++
			default:
				counts.Queued++
				waiting = append(waiting, it.created.DeliveryID)
				if r.OnQueued != nil {
					r.OnQueued(req.ReplayID, it.created.DeliveryID)
				}
			}
		}
		delivered, err := r.D.settle(ctx, waiting)
		if err != nil {
			return err
		}
		counts.Delivered += int64(delivered)
		counts.Position = win[len(win)-1].pos
		if err := r.Book.Checkpoint(ctx, req.ReplayID, *counts, false); err != nil {
			return err
		}
	}
	if counts.Position.Less(b.last) {
		counts.Position = b.last
		return r.Book.Checkpoint(ctx, req.ReplayID, *counts, false)
	}
	return nil
}

// pace spaces a replay's deliveries to at most Rate per second.
func (r *Replayer) pace(ctx context.Context) error {
	rate := r.Rate
	if rate <= 0 {
		rate = DefaultReplayRate
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(float64(time.Second) / rate)):
		return nil
	}
}

// replayOne queues the delivery c describes: an existing one is resent
// (unless it is already waiting), a missing one is created. queued is
// false when its person was erased: its body is gone and it is never sent.
func (d *Dispatcher) replayOne(ctx context.Context, c catalog.DeliveryCreated, by string) (queued bool, err error) {
	for attempt := 0; attempt < 10; attempt++ {
		del, err := d.load(ctx, c.DeliveryID)
		if errors.Is(err, domain.ErrDeliveryNotFound) {
			ev, err := d.encode(c, "")
			if err != nil {
				return false, err
			}
			_, err = d.Store.Append(ctx, domain.DeliveryStream(c.DeliveryID), events.NoStream(), ev)
			if events.IsConflict(err) {
				continue
			}
			if err != nil {
				return false, fmt.Errorf("replay: create delivery %s: %w", c.DeliveryID, err)
			}
			// The privacy layer stores an erased person's body as null.
			if del, err = d.load(ctx, c.DeliveryID); err != nil {
				return false, err
			}
			if del.created.Body == "" {
				return false, nil
			}
			d.handOver(ctx, c, nil)
			return true, nil
		}
		if err != nil {
			return false, err
		}
		resend, erased := decideReplayResend(del)
		if erased || !resend {
			return !erased, nil
		}
		ev, _ := decideResend(del, del.created.AppID, by, d.Clock.Now())
		if ev == nil {
			return true, nil
		}
		if _, err = d.append(ctx, del, *ev, by); events.IsConflict(err) {
			continue
		}
		return err == nil, err
	}
	return false, fmt.Errorf("replay %s: too many concurrent changes", c.DeliveryID)
}

// decideReplayResend says whether a replay resends an existing delivery:
// not one erased with its person (never sent again), nor one already
// waiting for its attempt (it is queued already).
func decideReplayResend(del *delivery) (resend, erased bool) {
	if del.created.Body == "" {
		return false, true
	}
	return del.status != domain.DeliveryPending, false
}

// settle waits until none of ids waits for its attempt any more, and says
// how many of them were delivered (2xx). A delivery that failed waits for
// its retries on the schedule, not holding the replay up.
func (d *Dispatcher) settle(ctx context.Context, ids []string) (int, error) {
	delivered := 0
	for len(ids) > 0 {
		changed := d.Projected.Changed()
		left := ids[:0]
		for _, id := range ids {
			del, err := d.load(ctx, id)
			if err != nil {
				return delivered, err
			}
			switch {
			case del.status == domain.DeliveryPending && del.created.Body != "":
				left = append(left, id)
			case del.status == domain.DeliveryDelivered:
				delivered++
			}
		}
		ids = left
		if len(ids) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return delivered, ctx.Err()
		case <-changed:
		case <-time.After(250 * time.Millisecond):
		}
	}
	return delivered, nil
}

package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/subscribe"
)

// Options tunes Run; the zero value is a sensible production setting.
type Options struct {
	// BatchSize caps the events handed to one Produce call (default 500).
	BatchSize int
	// MinBackoff and MaxBackoff bound the wait between retries of a failed
	// Produce or Save (defaults 100 ms and 10 s).
	MinBackoff, MaxBackoff time.Duration
	// OnRelayed, if set, is called after each acknowledged and checkpointed
	// batch so metrics can report throughput and lag (now - last.Created).
	OnRelayed func(n int, last events.Recorded)
}

func (o Options) withDefaults() Options {
	if o.BatchSize <= 0 {
		o.BatchSize = 500
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 100 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 10 * time.Second
	}
	o.MaxBackoff = max(o.MaxBackoff, o.MinBackoff)
	return o
}

// Run follows the log with the subscription runtime from cp's position,
// hands what has already arrived (at most BatchSize events, as stored) to
// p, retries each batch until p acknowledges it and only then checkpoints,
// so no event is skipped. It returns nil when ctx ends, and the log's
// failure otherwise (the caller restarts it, releasing the relay's lease).
func Run(ctx context.Context, store events.Store, p Producer, cp Checkpoints, log *slog.Logger, opts Options) error {
	opts = opts.withDefaults()
	var onApplied func(string, int, events.Recorded)
	if opts.OnRelayed != nil {
		onApplied = func(_ string, n int, last events.Recorded) { opts.OnRelayed(n, last) }
	}
	// A nil registry: the bus gets the stored bytes of every event, known
	// to this build or not.
	r := subscribe.NewRunner(store, nil, relayer{p: p, cp: cp, log: log, opts: opts}, log, onApplied)
	r.BatchSize(opts.BatchSize)
	r.StopOnError()
	if err := r.Run(ctx); err != nil && ctx.Err() == nil {
		return fmt.Errorf("relay: %w", err)
	}
	return nil
}

// relayer is the relay as the runtime's projector: its effect is the
// bus's acknowledgement, and its checkpoint is saved after it.
type relayer struct {
	p    Producer
	cp   Checkpoints
	log  *slog.Logger
	opts Options
}

func (relayer) Name() string { return "relay" }

func (r relayer) Checkpoint(ctx context.Context) (events.Position, error) {
	from, err := r.cp.Load(ctx)
	if err != nil {
		return events.Position{}, fmt.Errorf("load checkpoint: %w", err)
	}
	r.log.Info("relay started", "after", from.String())
	return from, nil
}

// Reset is refused: the bus cannot take back what it acknowledged.
func (relayer) Reset(context.Context) error {
	return errors.New("relay: the bus cannot be rebuilt; replay a topic from its retention instead")
}

// Apply produces batch until acknowledged, then saves pos.
func (r relayer) Apply(ctx context.Context, batch []events.Envelope, pos events.Position) error {
	recs := make([]events.Recorded, len(batch)) // fresh each time: a Producer may keep it
	for i, env := range batch {
		recs[i] = env.Recorded
	}
	if len(recs) > 0 {
		if err := retry(ctx, r.log, r.opts, "produce", func() error { return r.p.Produce(ctx, recs) }); err != nil {
			return err
		}
	}
	return retry(ctx, r.log, r.opts, "save checkpoint", func() error { return r.cp.Save(ctx, pos) })
}

// retry calls fn until it succeeds or ctx ends, doubling the wait up to MaxBackoff.
func retry(ctx context.Context, log *slog.Logger, opts Options, what string, fn func() error) error {
	wait := opts.MinBackoff
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Warn("relay: "+what+" failed; retrying", "attempt", attempt, "backoff", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		wait = min(wait*2, opts.MaxBackoff)
	}
}

package relay

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/healthtech/partner-open-platform/events"
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

// Run retries each batch until p acknowledges it and only then checkpoints, so no event is skipped; it returns nil when ctx ends.
func Run(ctx context.Context, store events.Store, p Producer, cp Checkpoints, log *slog.Logger, opts Options) error {
	opts = opts.withDefaults()
	from, err := cp.Load(ctx)
	if err != nil {
		return done(ctx, fmt.Errorf("relay: load checkpoint: %w", err))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sub, err := store.SubscribeAll(ctx, from)
	if err != nil {
		return done(ctx, fmt.Errorf("relay: subscribe after %s: %w", from, err))
	}
	defer sub.Close()
	log.Info("relay started", "after", from.String())

	// The pump reads ahead into a buffer so that a batch is simply whatever
	// has already arrived: the relay never waits to fill one.
	ch := make(chan next, opts.BatchSize)
	pumped := make(chan struct{})
	go pump(ctx, sub, ch, pumped)
	defer func() { cancel(); <-pumped }()

	for {
		var batch []events.Recorded // fresh each time: a Producer may keep it
		var readErr error
		select {
		case n := <-ch:
			batch, readErr = appendNext(batch, n)
		case <-ctx.Done():
			return nil
		}
	fill:
		for readErr == nil && len(batch) < opts.BatchSize {
			select {
			case n := <-ch:
				batch, readErr = appendNext(batch, n)
			default:
				break fill
			}
		}
		if len(batch) > 0 {
			if err := relayBatch(ctx, batch, p, cp, log, opts); err != nil {
				return done(ctx, err)
			}
		}
		if readErr != nil {
			return done(ctx, fmt.Errorf("relay: read log: %w", readErr))
		}
	}
}

// next is one result of Subscription.Next.
type next struct {
	ev  events.Recorded
	err error
}

func appendNext(batch []events.Recorded, n next) ([]events.Recorded, error) {
	if n.err != nil {
		return batch, n.err
	}
	return append(batch, n.ev), nil
}

func pump(ctx context.Context, sub events.Subscription, ch chan<- next, pumped chan<- struct{}) {
	defer close(pumped)
	for {
		ev, err := sub.Next(ctx)
		select {
		case ch <- next{ev, err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// relayBatch produces batch until acknowledged, then saves its last position.
func relayBatch(ctx context.Context, batch []events.Recorded, p Producer, cp Checkpoints, log *slog.Logger, opts Options) error {
	last := batch[len(batch)-1]
	if err := retry(ctx, log, opts, "produce", func() error { return p.Produce(ctx, batch) }); err != nil {
		return err
	}
	if err := retry(ctx, log, opts, "save checkpoint", func() error { return cp.Save(ctx, last.Position) }); err != nil {
		return err
	}
	if opts.OnRelayed != nil {
		opts.OnRelayed(len(batch), last)
	}
	return nil
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

// done turns an error caused by the end of ctx into the clean nil return.
func done(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

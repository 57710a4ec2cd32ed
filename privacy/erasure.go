package privacy

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/subscribe"
)

// Forgetter drops a subject's data key from one process's cache
// (keys.Keys.Forget), so the next decrypt asks the key store.
type Forgetter interface {
	Forget(subject string)
}

// ErasureFollower makes an erasure reach this node as soon as the node sees
// the erasure event in the log, not after the key cache's TTL: the key was
// destroyed in the shared key store before user.erased was appended, so
// once the cached key is forgotten every decrypt of the person's fields on
// this node reads as erased.
type ErasureFollower struct {
	// Store is the log as stored (the follower reads no personal field, so
	// it needs no decryption).
	Store events.Store
	// Keys is this node's key cache.
	Keys Forgetter
	// From is the position after which to follow; Run advances it, so a
	// restarted Run resumes where the last one stopped. Set it to the head
	// of the log before this node opens its first key.
	From events.Position
	// Forgot, if set, is called after each subject is forgotten (metrics, tests).
	Forgot func(subject string, at events.Position)
	// Log reports the follower's restarts (nil: discarded).
	Log *slog.Logger

	once   sync.Once
	runner *subscribe.Runner // made once, so that WaitFor follows every Run
}

var erasedType = (catalog.UserErased{}).EventType()

// Run follows the log with the subscription runtime until ctx ends,
// restarting after failures with backoff. Only one Run may run at a time.
func (f *ErasureFollower) Run(ctx context.Context) error {
	return f.Runner().Run(ctx)
}

// Runner is the follower's subscription runner: its WaitFor returns once
// the follower has acted on every erasure up to a position, so an erasure's
// answer can wait until the node's caches have forgotten the person.
func (f *ErasureFollower) Runner() *subscribe.Runner {
	f.once.Do(func() {
		log := f.Log
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		// The stored bytes are all it reads (nil registry): one field of
		// one event type, no decrypting, no decoding of the rest.
		f.runner = subscribe.NewRunner(f.Store, nil, erasureProjector{f}, log, nil)
	})
	return f.runner
}

// erasureProjector is the follower as the runtime's projector: its
// checkpoint is From, in memory (a restarted node starts at the head).
type erasureProjector struct{ f *ErasureFollower }

func (erasureProjector) Name() string { return "erasure-follower" }

func (p erasureProjector) Checkpoint(context.Context) (events.Position, error) { return p.f.From, nil }

func (p erasureProjector) Reset(context.Context) error {
	p.f.From = events.Position{}
	return nil
}

func (p erasureProjector) Apply(_ context.Context, batch []events.Envelope, pos events.Position) error {
	for _, rec := range batch {
		if rec.Type != erasedType {
			continue
		}
		var ev struct {
			OpenUserID int64 `json:"open_user_id"`
		}
		if err := json.Unmarshal(rec.Data, &ev); err != nil {
			return fmt.Errorf("erasure follower: %s at %s: %w", rec.Type, rec.Position, err)
		}
		subject := "user-" + strconv.FormatInt(ev.OpenUserID, 10)
		p.f.Keys.Forget(subject)
		if p.f.Forgot != nil {
			p.f.Forgot(subject, rec.Position)
		}
		p.f.From = rec.Position
	}
	p.f.From = pos
	return nil
}

package projections

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/subscribe"
)

// Journal wraps a projector whose state lives only in memory and whose
// events are few among many (the app and operator directories, the plugin
// analyzer): it remembers the positions of the events it applied, so that
// a snapshot can keep them and a start can rebuild the state by reading
// just those events back from the log, instead of scanning the whole log
// for them. The log stays the only source: the journal holds positions,
// never the events' content.
type Journal struct {
	subscribe.Projector
	// Log reads the events back (as the runner sees them: opened).
	Log events.Store
	// Registry decodes them.
	Registry *events.Registry
	// CheckpointOnly keeps no positions: for a projector whose effects
	// live outside it (the analyzer's are commands), restoring its
	// checkpoint is all a start needs.
	CheckpointOnly bool

	mu        sync.Mutex
	positions []events.Position
}

// NewJournal wraps p, reading its events back from log.
func NewJournal(p subscribe.Projector, log events.Store, reg *events.Registry) *Journal {
	return &Journal{Projector: p, Log: log, Registry: reg}
}

// Handles forwards the wrapped projector's filter, so the runner keeps
// skipping the events it ignores.
func (j *Journal) Handles(eventType string) bool {
	if f, ok := j.Projector.(interface{ Handles(string) bool }); ok {
		return f.Handles(eventType)
	}
	return true
}

// Apply applies the batch and notes its events' positions, both under the
// journal's lock, so State always pairs a checkpoint with exactly the
// events applied up to it.
func (j *Journal) Apply(ctx context.Context, batch []events.Envelope, pos events.Position) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.Projector.Apply(ctx, batch, pos); err != nil {
		return err
	}
	if !j.CheckpointOnly {
		for _, env := range batch {
			j.positions = append(j.positions, env.Position)
		}
	}
	return nil
}

// Reset empties the state and the journal.
func (j *Journal) Reset(ctx context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.Projector.Reset(ctx); err != nil {
		return err
	}
	j.positions = nil
	return nil
}

// State returns the checkpoint and the positions of the events applied up to it.
func (j *Journal) State(ctx context.Context) (events.Position, []events.Position, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	cp, err := j.Projector.Checkpoint(ctx)
	if err != nil {
		return events.Position{}, nil, err
	}
	return cp, slices.Clone(j.positions), nil
}

// Restore reads the events at positions back from the log and applies
// them, then moves the checkpoint to cp; an event missing from the log, or
// of a type the projector does not handle, fails it (the caller then
// resets and lets the runner scan the log). Call it before the runner starts.
func (j *Journal) Restore(ctx context.Context, cp events.Position, positions []events.Position) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	batch := make([]events.Envelope, 0, len(positions))
	for _, pos := range positions {
		if cp.Less(pos) {
			return fmt.Errorf("journal %s: event at %s is after its checkpoint %s", j.Name(), pos, cp)
		}
		rec, found, err := events.ReadAt(ctx, j.Log, pos)
		if err != nil {
			return fmt.Errorf("journal %s: read %s: %w", j.Name(), pos, err)
		}
		if !found || !j.Handles(rec.Type) {
			return fmt.Errorf("journal %s: the log holds no event of this projector at %s", j.Name(), pos)
		}
		env, err := j.Registry.Decode(rec)
		if err != nil {
			return fmt.Errorf("journal %s: decode %s: %w", j.Name(), pos, err)
		}
		batch = append(batch, env)
	}
	if err := j.Projector.Apply(ctx, batch, cp); err != nil {
		return fmt.Errorf("journal %s: %w", j.Name(), err)
	}
	j.positions = slices.Clone(positions)
	return nil
}

package commands

import (
	"context"
	"sync"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Analyzer runs the algorithm step for every recorded measurement that
// needs one. It is a projection runner's projector whose effect is a
// command; Analyze is idempotent, so replaying the log from the start (its
// checkpoint lives in memory) re-analyses nothing.
type Analyzer struct {
	Plugin *Plugin

	mu  sync.Mutex
	pos events.Position
}

// Name is the runner's name.
func (*Analyzer) Name() string { return "plugin_analyzer" }

// Handles names the one event type the analyzer acts on, so its runner
// neither decrypts nor decodes the rest of the log.
func (*Analyzer) Handles(eventType string) bool {
	return eventType == (catalog.PluginMeasurementRecorded{}).EventType()
}

// Checkpoint is the last position handled by this process.
func (a *Analyzer) Checkpoint(context.Context) (events.Position, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pos, nil
}

// Reset starts over; every measurement is checked again, none analysed twice.
func (a *Analyzer) Reset(context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pos = events.Position{}
	return nil
}

// Apply analyses the batch's measurements that wait for their algorithm step.
func (a *Analyzer) Apply(ctx context.Context, batch []events.Envelope, pos events.Position) error {
	for _, env := range batch {
		if m, ok := env.Payload.(*catalog.PluginMeasurementRecorded); ok && m.NeedsAnalysis {
			if _, err := a.Plugin.Analyze(ctx, m.SessionID); err != nil {
				return err
			}
		}
	}
	a.mu.Lock()
	a.pos = pos
	a.mu.Unlock()
	return nil
}

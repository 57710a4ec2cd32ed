package commands

import (
	"context"
	"slices"
	"strings"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/eventtypes"
)

// TriggerSandboxEvent asks for one sample webhook event of type event for
// a sandbox app (the caller checks the environment); the dispatcher renders
// and delivers it like the real event of that type. Every request is a new
// event.
func (a *Apps) TriggerSandboxEvent(ctx context.Context, appID int64, event string, meta Meta) (events.Position, error) {
	if !slices.Contains(eventtypes.Triggerable(), event) {
		v := &domain.ValidationError{}
		v.Add("event", "must be one of "+strings.Join(eventtypes.Triggerable(), ", "))
		return events.Position{}, v
	}
	return a.decide(ctx, appID, meta, func(*appState) (events.Payload, error) {
		return catalog.AppSandboxEventTriggered{AppID: appID, Event: event}, nil
	})
}

package commandapi

import (
	"net/http"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// sandboxEventRoutes let a sandbox app cause sample webhook events.
func (a *API) sandboxEventRoutes() []Route {
	return []Route{
		{Method: "POST", Path: "/open/v1/webhooks/sandbox-events", Handle: a.partner(a.triggerSandboxEvent)},
	}
}

// triggerSandboxEvent records a sample event of the asked type; the
// dispatcher turns it into deliveries and a feed entry shortly after.
func (a *API) triggerSandboxEvent(c *call) error {
	if c.app.Environment != commands.EnvSandbox {
		return domain.ErrSandboxOnly
	}
	var event string
	if err := c.decode(func(o *httpapi.Object) { event = o.RequiredString("event") }); err != nil {
		return err
	}
	if err := c.claim(); err != nil {
		return err
	}
	pos, err := a.Apps.TriggerSandboxEvent(c.r.Context(), c.app.AppID, event, c.meta)
	if err != nil {
		return err
	}
	c.config.Watermarks.Wrote(c.app.AppID, pos)
	httpapi.OK(c.w, http.StatusAccepted, map[string]any{"event": event, "queued": true})
	return nil
}

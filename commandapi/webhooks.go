package commandapi

import (
	"context"
	"net/http"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// Resender puts deliveries back in the queue; the webhook dispatcher implements it.
type Resender interface {
	Resend(ctx context.Context, appID int64, id, by string) (events.Position, error)
	ResendMatching(ctx context.Context, f domain.DeliveryFilter, by string) (int, events.Position, error)
}

func (a *API) webhookRoutes() []Route {
	return []Route{
		{Method: "PATCH", Path: "/admin/v1/apps/:appId", Handle: a.admin(a.configureWebhook)},
		{Method: "POST", Path: "/admin/v1/deliveries/:deliveryId/resend", Handle: a.admin(a.adminResend)},
		{Method: "POST", Path: "/admin/v1/apps/:appId/deliveries/resend", Handle: a.admin(a.adminResendMatching)},
		{Method: "POST", Path: "/open/v1/webhooks/deliveries/:deliveryId/resend", Handle: a.partner(a.partnerResend)},
	}
}

func (a *API) configureWebhook(c *call) error {
	ids, err := c.ids("appId")
	if err != nil {
		return err
	}
	var s commands.WebhookSettings
	if err := c.decode(func(o *httpapi.Object) {
		s.URL = o.String("webhook_url")
		if o.Has("webhook_events") {
			s.Events = domain.Val(o.Strings("webhook_events"))
		}
	}); err != nil {
		return err
	}
	if s.URL.Null {
		s.URL = domain.Val("")
	}
	pos, err := a.Apps.ConfigureWebhook(c.r.Context(), ids[0], s, c.meta)
	if err != nil {
		return err
	}
	if err := a.waitApps(c.r.Context(), pos); err != nil {
		return err
	}
	httpapi.OK(c.w, http.StatusOK, nil)
	return nil
}

func (a *API) resend(c *call, appID int64) error {
	if err := c.claim(); err != nil {
		return err
	}
	pos, err := a.Resender.Resend(c.r.Context(), appID, c.ps.ByName("deliveryId"), c.meta.Actor)
	if err != nil {
		return err
	}
	c.config.Watermarks.Wrote(appID, pos)
	httpapi.OK(c.w, http.StatusAccepted, map[string]any{"delivery_id": c.ps.ByName("deliveryId"), "queued": !pos.IsZero()})
	return nil
}

func (a *API) adminResend(c *call) error { return a.resend(c, 0) }

func (a *API) partnerResend(c *call) error { return a.resend(c, c.app.AppID) }

// adminResendMatching resends an app's deliveries selected by the delivery-log filters.
func (a *API) adminResendMatching(c *call) error {
	ids, err := c.ids("appId")
	if err != nil {
		return err
	}
	f, err := httpapi.DeliveryFilter(c.r, a.Location)
	if err != nil {
		return err
	}
	f.AppID = ids[0]
	if _, ok := a.SchemeM.Apps.ByID(f.AppID); !ok {
		return domain.ErrAppNotFound
	}
	n, _, err := a.Resender.ResendMatching(c.r.Context(), f, c.meta.Actor)
	if err != nil {
		return err
	}
	httpapi.OK(c.w, http.StatusAccepted, map[string]any{"queued": n})
	return nil
}

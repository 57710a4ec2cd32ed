package commandapi

import (
	"context"
	"net/http"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/projections"
)

// Resender puts deliveries back in the queue; the webhook dispatcher implements it.
type Resender interface {
	Resend(ctx context.Context, appID int64, id, by string) (events.Position, error)
	// ResendMany queues a page of deliveries in grouped appends, passing
	// over (uncounted) erased, already pending, unknown and other apps'
	// ones, and says how many it queued and the last position written.
	ResendMany(ctx context.Context, appID int64, ids []string, by string) (int, events.Position, error)
}

// DefaultBulkResendCap is how many matching deliveries one bulk resend
// call examines at most when API.BulkResendCap is 0: a few seconds of work
// even on a loaded machine, well inside the server's 30 s write timeout.
const DefaultBulkResendCap = 5000

// bulkResendBudget stops a bulk resend after the page that passes it, so
// a slow store cannot hold the request past the write timeout either.
const bulkResendBudget = 10 * time.Second

// DeliveryLister pages through the delivery log (the deliveries read
// model), for the resend of every delivery a filter selects.
type DeliveryLister interface {
	Deliveries(ctx context.Context, f domain.DeliveryFilter) ([]projections.Delivery, error)
}

// DeliveryErasures refuses the resend of a delivery whose payload was
// erased with its user (commands.DeliveryErasures implements it): Check
// gives domain.ErrDeliveryErased for one, domain.ErrDeliveryNotFound for a
// delivery of another app than appID (0: any app), nil otherwise.
type DeliveryErasures interface {
	Check(ctx context.Context, appID int64, deliveryID string) error
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
	pos, err := a.resendOne(c.r.Context(), appID, c.ps.ByName("deliveryId"), c.meta.Actor)
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
	limit := a.BulkResendCap
	if limit <= 0 {
		limit = DefaultBulkResendCap
	}
	// An operator's limit (1 to 1,000, validated with the filters) lowers
	// the count examined, e.g. to resend a sample before the backlog.
	if c.r.URL.Query().Has("limit") {
		limit = min(limit, f.Limit)
	}
	n, next, last, err := a.resendMatching(c.r.Context(), f, limit, c.meta.Actor)
	if err != nil {
		return err
	}
	c.config.Watermarks.Wrote(0, last)
	out := map[string]any{"queued": n}
	if next != "" {
		out["next_after"] = next
	}
	httpapi.OK(c.w, http.StatusAccepted, out)
	return nil
}

// resendOne queues one delivery again, unless its payload was erased with
// its user (410 DELIVERY_ERASED: it can never be sent).
func (a *API) resendOne(ctx context.Context, appID int64, id, by string) (events.Position, error) {
	if err := a.DeliveryErasures.Check(ctx, appID, id); err != nil {
		return events.Position{}, err
	}
	return a.Resender.Resend(ctx, appID, id, by)
}

// resendMatching resends the deliveries the filter selects, a page of
// them per grouped append, and says how many it queued: erased deliveries
// are skipped and not counted, nor are those already pending. It examines
// at most limit (and stops after the page that passes bulkResendBudget):
// next is then the cursor to continue from ("" when every match was
// examined), and last the last position it wrote.
func (a *API) resendMatching(ctx context.Context, f domain.DeliveryFilter, limit int, by string) (n int, next string, last events.Position, err error) {
	deadline := time.Now().Add(bulkResendBudget)
	examined := 0
	for {
		f.Limit, f.WithoutBodies = min(500, limit-examined), true
		page, err := a.Deliveries.Deliveries(ctx, f)
		if err != nil {
			return n, "", last, err
		}
		ids := make([]string, len(page))
		for i, del := range page {
			ids[i] = del.DeliveryID
		}
		queued, pos, err := a.Resender.ResendMany(ctx, f.AppID, ids, by)
		n += queued
		if last.Less(pos) {
			last = pos
		}
		if err != nil {
			return n, "", last, err
		}
		examined += len(page)
		if len(page) < f.Limit {
			return n, "", last, nil
		}
		f.After = page[len(page)-1].Cursor
		if examined >= limit || time.Now().After(deadline) {
			return n, httpapi.FormatCursor(f.After), last, nil
		}
	}
}

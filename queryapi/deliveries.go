package queryapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/projections"
)

// deliveryRoutes are the delivery log and feed routes.
func (q *API) deliveryRoutes() []httpapi.Route {
	return []httpapi.Route{
		{Method: "GET", Path: "/admin/v1/deliveries", Handle: q.admin(q.adminDeliveries)},
		{Method: "GET", Path: "/admin/v1/deliveries/:deliveryId", Handle: q.admin(q.adminDelivery)},
		{Method: "GET", Path: "/open/v1/webhooks/deliveries", Handle: q.partner(projections.ReadModelDeliveries, q.partnerDeliveries)},
		{Method: "GET", Path: "/open/v1/webhooks/deliveries/:deliveryId", Handle: q.partner(projections.ReadModelDeliveries, q.partnerDelivery)},
		{Method: "GET", Path: "/open/v1/webhooks/events", Handle: q.partner(projections.ReadModelDeliveries, q.feed)},
	}
}

// partner authenticates a signed read and waits for the app's last write.
func (q *API) partner(f projections.ReadModel, h func(w http.ResponseWriter, r *http.Request, ps httprouter.Params, appID int64) error) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		err := func() error {
			body, err := httpapi.ReadBody(r)
			if err != nil {
				return err
			}
			app, err := q.partnerAuth().Verify(r, body)
			if err != nil {
				return err
			}
			if err := httpapi.CheckParams(r, ps); err != nil {
				return err
			}
			if err := q.await(r.Context(), app.AppID, f); err != nil {
				return err
			}
			return h(w, r, ps, app.AppID)
		}()
		if err != nil {
			httpapi.Error(w, r, err)
		}
	}
}

// awaitCreations waits until the deliveries read model has applied the
// log's head as read when the read begins. A delivery is the dispatcher's
// append, which no write of the partner's names, so the app's watermark
// does not cover it; yet a partner that receives a webhook may read that
// delivery by its X-Webhook-Id, or find it in the feed, at once. Its
// creation committed before its first POST, so the head read after the
// POST arrived holds it. Where reads follow the head anyway
// (Watermarks.FollowsHead) the wait has been done.
func (q *API) awaitCreations(ctx context.Context) error {
	if q.Watermarks.FollowsHead() || q.Events == nil {
		return nil
	}
	head, err := q.Events.Head(ctx)
	if err != nil {
		return err
	}
	return q.deliveriesRunner().WaitFor(ctx, head)
}

type attemptView struct {
	Attempt int `json:"attempt"`
	// ResponseExcerpt is the start of the receiver's answer (at most 256
	// bytes; empty when none or once the delivery's user is erased).
	ResponseExcerpt string  `json:"response_excerpt"`
	At              string  `json:"at"`
	StatusCode      *int    `json:"status_code"`
	LatencyMS       int64   `json:"latency_ms"`
	Error           *string `json:"error"`
	ErrorClass      *string `json:"error_class"`
	Outcome         string  `json:"outcome"`
}

// failure is what a view shows of an attempt's failure: its class, and
// either the recorded detail (operators) or the class's fixed text
// (partners: raw transport errors can carry certificate details, resolver
// messages and internal addresses). Rows projected before classes existed
// get the class their detail implies.
func failure(detail, class *string, status *int, operator bool) (*string, *string) {
	if detail == nil && class == nil && (status == nil || (*status >= 200 && *status < 300)) {
		return nil, nil
	}
	if class == nil {
		code := 0
		if status != nil {
			code = *status
		}
		text := ""
		if detail != nil {
			text = *detail
		}
		c := domain.ClassifyDeliveryFailure(text, code)
		if c == "" {
			return detail, nil
		}
		class = &c
	}
	if operator {
		return detail, class
	}
	msg := domain.ErrorClassMessages[*class]
	if msg == "" {
		msg = domain.ErrorClassMessages[domain.ErrorClassOther]
	}
	return &msg, class
}

func deliveryView(d projections.Delivery, withPayload, operator bool) map[string]any {
	var next *string
	if d.NextAttemptAt != nil {
		s := d.NextAttemptAt.Format(time.RFC3339)
		next = &s
	}
	lastError, lastClass := failure(d.LastError, d.LastErrorClass, d.LastStatus, operator)
	out := map[string]any{
		"delivery_id": d.DeliveryID, "app_id": d.AppID, "endpoint_id": d.EndpointID, "event": d.EventType, "status": d.Status,
		"attempts": d.Attempts, "next_attempt_at": next, "last_status_code": d.LastStatus,
		"last_error": lastError, "last_error_class": lastClass,
		"created_at": d.CreatedAt.Format(time.RFC3339), "updated_at": d.UpdatedAt.Format(time.RFC3339),
		"cursor": httpapi.FormatCursor(d.Cursor),
	}
	if withPayload {
		out["payload"] = payloadOf(d.Body)
	}
	return out
}

func (q *API) listDeliveries(w http.ResponseWriter, r *http.Request, f domain.DeliveryFilter, operator bool) error {
	f.WithoutBodies = true // a list shows no payload
	list, err := q.Deliveries.Deliveries(r.Context(), f)
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(list))
	for _, d := range list {
		out = append(out, deliveryView(d, false, operator))
	}
	var next *string
	if len(list) == f.Limit && len(list) > 0 {
		c := httpapi.FormatCursor(list[len(list)-1].Cursor)
		next = &c
	}
	httpapi.OK(w, http.StatusOK, map[string]any{"deliveries": out, "next_cursor": next})
	return nil
}

// showDelivery shows one delivery; appID 0 is an operator, who may see any
// app's delivery and the raw error detail, and sees the body's personal
// fields and the receiver's answers redacted unless an auditor reveals
// them with a reason (an audit fact, recorded before they are shown).
func (q *API) showDelivery(w http.ResponseWriter, r *http.Request, appID int64, id string) error {
	operator := appID == 0
	var reveal bool
	var reason string
	if operator {
		var err error
		if reveal, reason, err = revealRequest(r); err != nil {
			return err
		}
	}
	d, attempts, err := q.Deliveries.Delivery(r.Context(), appID, id)
	if errors.Is(err, projections.ErrNotFound) {
		return domain.ErrDeliveryNotFound
	}
	if err != nil {
		return err
	}
	out := deliveryView(d, true, operator)
	views := make([]attemptView, 0, len(attempts))
	for _, a := range attempts {
		msg, class := failure(a.Error, a.ErrorClass, a.StatusCode, operator)
		views = append(views, attemptView{Attempt: a.Attempt, ResponseExcerpt: a.ResponseExcerpt, At: a.At.Format(time.RFC3339Nano), StatusCode: a.StatusCode,
			LatencyMS: a.LatencyMS, Error: msg, ErrorClass: class, Outcome: a.Outcome})
	}
	out["attempt_log"] = views
	if operator {
		if err := q.revealOrRedactDelivery(w, r, reveal, reason, d, out, views); err != nil {
			return err
		}
	}
	httpapi.OK(w, http.StatusOK, out)
	return nil
}

func (q *API) adminDeliveries(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	f, err := httpapi.DeliveryFilter(r, q.Location)
	if err == nil {
		err = q.listDeliveries(w, r, f, true)
	}
	if err != nil {
		httpapi.Error(w, r, err)
	}
}

func (q *API) adminDelivery(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if err := q.showDelivery(w, r, 0, ps.ByName("deliveryId")); err != nil {
		httpapi.Error(w, r, err)
	}
}

func (q *API) partnerDeliveries(w http.ResponseWriter, r *http.Request, _ httprouter.Params, appID int64) error {
	f, err := httpapi.DeliveryFilter(r, q.Location)
	if err != nil {
		return err
	}
	f.AppID = appID
	return q.listDeliveries(w, r, f, false)
}

func (q *API) partnerDelivery(w http.ResponseWriter, r *http.Request, ps httprouter.Params, appID int64) error {
	return q.showDelivery(w, r, appID, ps.ByName("deliveryId"))
}

// feed returns the app's webhook events after a cursor, oldest first, with
// the exact bodies the webhooks carry, so a partner can catch up alone;
// with wait, a request with nothing new waits for it (awaitFeed).
func (q *API) feed(w http.ResponseWriter, r *http.Request, _ httprouter.Params, appID int64) error {
	after, ok := httpapi.ParseCursor(r.URL.Query().Get("after"))
	if !ok {
		v := &domain.ValidationError{}
		v.Add("after", "must be a cursor returned by this API")
		return v
	}
	limit, err := httpapi.Limit(r, 100, 1000)
	if err != nil {
		return err
	}
	wait, err := feedWait(r)
	if err != nil {
		return err
	}
	if wait > 0 {
		if !q.feedWaiters.enter(appID) {
			return errTooManyWaiters
		}
		defer q.feedWaiters.leave(appID)
	}
	list, err := awaitFeed(r.Context(), q, wait, func() ([]projections.Delivery, error) {
		return q.Deliveries.Deliveries(r.Context(), domain.DeliveryFilter{AppID: appID, After: after, Limit: int(limit), Feed: true})
	})
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(list))
	next := httpapi.FormatCursor(after)
	for _, d := range list {
		next = httpapi.FormatCursor(d.Cursor)
		out = append(out, map[string]any{"cursor": next, "delivery_id": d.DeliveryID, "event": d.EventType, "payload": payloadOf(d.Body)})
	}
	httpapi.OK(w, http.StatusOK, map[string]any{"events": out, "next_cursor": next, "has_more": len(list) == int(limit)})
	return nil
}

// payloadOf is a delivery's body as JSON: null once its user was erased.
func payloadOf(body []byte) json.RawMessage {
	if len(body) == 0 {
		return json.RawMessage("null")
	}
	return json.RawMessage(body)
}

// revealOrRedactDelivery applies an operator's reveal to a delivery's view:
// without it the body's personal fields (catalog.RedactWebhook) and every
// non-empty receiver answer (which may echo the body) read as
// catalog.Redacted, as the delivery's events do in the admin history; with
// it the reveal is first recorded as an audit fact naming the delivery's
// stream and the person the body is about.
func (q *API) revealOrRedactDelivery(w http.ResponseWriter, r *http.Request, reveal bool, reason string, d projections.Delivery, out map[string]any, views []attemptView) error {
	if reveal {
		subjects := []string{domain.DeliveryStream(d.DeliveryID)}
		if d.Subject != "" {
			subjects = append(subjects, d.Subject)
		}
		pos, err := q.Auditor.RecordAccess(r.Context(), catalog.AccessAudited{
			Actor: operatorOf(r.Context()).Actor(), Action: catalog.AuditRevealDelivery, Subjects: subjects, Reason: reason,
		}, w.Header().Get(httpapi.RequestIDHeader))
		if err != nil {
			return err
		}
		q.Watermarks.Wrote(0, pos)
		return nil
	}
	if len(d.Body) > 0 {
		redacted, _, err := catalog.RedactWebhook(d.EventType, d.Body)
		if err != nil {
			return err
		}
		out["payload"] = json.RawMessage(redacted)
	}
	for i := range views {
		if views[i].ResponseExcerpt != "" {
			views[i].ResponseExcerpt = catalog.Redacted
		}
	}
	return nil
}

package portal

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/projections"
)

// Webhook endpoints and their delivery log: a developer
// manages the endpoints of their own apps. Every change is a command of
// commands.Apps with the developer as actor; the pages read the app
// directory (endpoints, as the dispatcher uses them) and the deliveries
// read model. Another developer's app or endpoint answers the same 404
// page as a missing one.

func init() {
	addRoutes(func(s *Server) {
		s.Developer("GET /portal/apps/{appId}/endpoints", s.endpointsPage)
		s.Developer("POST /portal/apps/{appId}/endpoints", s.addEndpoint)
		s.Developer("GET /portal/apps/{appId}/endpoints/{endpointId}/edit", s.editEndpointPage)
		s.Developer("POST /portal/apps/{appId}/endpoints/{endpointId}", s.updateEndpoint)
		s.Developer("POST /portal/apps/{appId}/endpoints/{endpointId}/disable", s.endpointAction(disableEndpoint))
		s.Developer("POST /portal/apps/{appId}/endpoints/{endpointId}/enable", s.endpointAction(enableEndpoint))
		s.Developer("POST /portal/apps/{appId}/endpoints/{endpointId}/delete", s.confirmFirst(s.askEndpoint("Delete",
			"It gets no more deliveries, and this cannot be undone"), s.endpointAction(deleteEndpoint)))
		s.Developer("POST /portal/apps/{appId}/endpoints/{endpointId}/activate", s.endpointAction(activateEndpointSecret))
		s.Developer("POST /portal/apps/{appId}/endpoints/{endpointId}/test", s.endpointAction(sendTestEvent))
		s.Developer("POST /portal/apps/{appId}/endpoints/{endpointId}/rotate", s.confirmFirst(s.askEndpoint("Rotate the secret of",
			"A new secret is issued and shown once; the current one keeps signing until you activate the new one"), s.rotateEndpointSecret))
		s.Developer("GET /portal/apps/{appId}/endpoints/{endpointId}/deliveries", s.deliveriesPage)
		s.Developer("POST /portal/apps/{appId}/endpoints/{endpointId}/deliveries/{deliveryId}/resend", s.resendDelivery)
	})
}

// ownedEndpoint is the app and endpoint named in the URL, if the signed-in
// developer owns the app and the app has the endpoint.
func (s *Server) ownedEndpoint(r *http.Request) (domain.App, domain.Endpoint, bool) {
	app, ok := s.ownApp(r)
	if !ok {
		return domain.App{}, domain.Endpoint{}, false
	}
	id, err := strconv.ParseInt(r.PathValue("endpointId"), 10, 64)
	if err != nil || id < 0 {
		return domain.App{}, domain.Endpoint{}, false
	}
	ep, found := app.Endpoint(id)
	return app, ep, found
}

// editableEndpoint is ownedEndpoint, except that the default endpoint is
// found without a URL too: it is the app's webhook, which a developer may
// give a URL on its edit page.
func (s *Server) editableEndpoint(r *http.Request) (domain.App, domain.Endpoint, bool) {
	app, ep, ok := s.ownedEndpoint(r)
	if ok || r.PathValue("endpointId") != "0" {
		return app, ep, ok
	}
	app, ok = s.ownApp(r)
	return app, app.DefaultEndpoint(), ok
}

// endpointView is an endpoint as its page shows it (never its secrets).
type endpointView struct {
	ID       int64
	Default  bool
	URL      string
	Events   string // "" : every event
	Disabled bool
	Pending  bool // a rotated secret awaits activation
	Updated  time.Time
	// Description is the partner's note of what the endpoint is for.
	Description string
}

func viewEndpoint(e domain.Endpoint) endpointView {
	return endpointView{ID: e.EndpointID, Default: e.EndpointID == domain.DefaultEndpointID, URL: e.URL,
		Events: strings.Join(e.Events, ", "), Disabled: e.Disabled, Pending: e.PendingSecret != "", Updated: e.UpdatedAt, Description: e.Description}
}

type endpointsData struct {
	App       domain.App
	Endpoints []endpointView
	// Default is the default endpoint, shown apart while it has no URL
	// (NoDefaultURL), so that its secret and how to use it are visible.
	Default      endpointView
	NoDefaultURL bool
	Max          int
	Form         url.Values
	Errors       map[string][]string
}

func (s *Server) endpointsPage(w http.ResponseWriter, r *http.Request) {
	app, ok := s.ownApp(r)
	if !ok {
		s.NotFound(w, r)
		return
	}
	s.renderEndpoints(w, r, http.StatusOK, app, nil, nil)
}

func (s *Server) renderEndpoints(w http.ResponseWriter, r *http.Request, status int, app domain.App, form url.Values, errs map[string][]string) {
	var views []endpointView
	for _, e := range app.WebhookEndpoints() {
		views = append(views, viewEndpoint(e))
	}
	def := app.DefaultEndpoint()
	s.Render(w, r, status, "endpoints_list.html", endpointsData{App: app, Endpoints: views, Default: viewEndpoint(def), NoDefaultURL: def.URL == "",
		Max: domain.MaxEndpoints, Form: form, Errors: errs})
}

// subscriptions reads the "events" field: names separated by commas,
// spaces or lines; none means every event.
func subscriptions(raw string) []string {
	fields := strings.FieldsFunc(raw, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
	if len(fields) == 0 {
		return nil
	}
	return fields
}

// formValues parses the (bounded) form.
func formValues(w http.ResponseWriter, r *http.Request) (url.Values, error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		return nil, err
	}
	return r.PostForm, nil
}

// secretData is the page that shows a new endpoint secret, once.
type secretData struct {
	App      domain.App
	Endpoint int64
	Secret   struct{ Label, Value string }
	Pending  bool
}

func (s *Server) showSecret(w http.ResponseWriter, r *http.Request, app domain.App, endpointID int64, secret string, pending bool) {
	d := secretData{App: app, Endpoint: endpointID, Pending: pending}
	d.Secret.Label, d.Secret.Value = "Webhook secret of endpoint "+strconv.FormatInt(endpointID, 10), secret
	if pending {
		d.Secret.Label = "New (pending) webhook secret of endpoint " + strconv.FormatInt(endpointID, 10)
	}
	s.Render(w, r, http.StatusOK, "endpoints_secret.html", d)
}

func (s *Server) addEndpoint(w http.ResponseWriter, r *http.Request) {
	app, ok := s.ownApp(r)
	if !ok {
		s.NotFound(w, r)
		return
	}
	form, err := formValues(w, r)
	if err != nil {
		s.ErrorPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	in := commands.EndpointInput{URL: strings.TrimSpace(form.Get("url")), Events: subscriptions(form.Get("events")), Description: strings.TrimSpace(form.Get("description"))}
	created, err := s.Apps.AddEndpoint(r.Context(), app.AppID, in, Meta(w, r))
	if errs := FieldErrors(err); errs != nil {
		s.renderEndpoints(w, r, http.StatusBadRequest, app, form, errs)
		return
	}
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.waitApps(r.Context(), created.Position)
	s.showSecret(w, r, app, created.EndpointID, created.WebhookSecret, false)
}

type editData struct {
	App      domain.App
	Endpoint endpointView
	Form     url.Values
	Errors   map[string][]string
}

func (s *Server) editEndpointPage(w http.ResponseWriter, r *http.Request) {
	app, ep, ok := s.editableEndpoint(r)
	if !ok {
		s.NotFound(w, r)
		return
	}
	v := viewEndpoint(ep)
	s.Render(w, r, http.StatusOK, "endpoints_edit.html", editData{App: app, Endpoint: v, Form: url.Values{"url": {v.URL}, "events": {v.Events}, "description": {v.Description}}})
}

func (s *Server) updateEndpoint(w http.ResponseWriter, r *http.Request) {
	app, ep, ok := s.editableEndpoint(r)
	if !ok {
		s.NotFound(w, r)
		return
	}
	form, err := formValues(w, r)
	if err != nil {
		s.ErrorPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	set := commands.WebhookSettings{URL: domain.Val(strings.TrimSpace(form.Get("url"))), Events: domain.Val(subscriptions(form.Get("events")))}
	ch := commands.EndpointChange{Settings: set, Description: domain.Val(strings.TrimSpace(form.Get("description")))}
	pos, err := s.Apps.ChangeEndpoint(r.Context(), app.AppID, ep.EndpointID, ch, Meta(w, r))
	if errs := FieldErrors(err); errs != nil {
		s.Render(w, r, http.StatusBadRequest, "endpoints_edit.html", editData{App: app, Endpoint: viewEndpoint(ep), Form: form, Errors: errs})
		return
	}
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.waitApps(r.Context(), pos)
	s.Redirect(w, r, endpointsPath(app.AppID), Flash{Kind: "info", Message: "Endpoint " + strconv.FormatInt(ep.EndpointID, 10) + " saved."})
}

func endpointsPath(appID int64) string {
	return "/portal/apps/" + strconv.FormatInt(appID, 10) + "/endpoints"
}

// endpointCommand is one of the form buttons on an endpoint.
type endpointCommand struct {
	run  func(s *Server, ctx context.Context, appID, endpointID int64, meta commands.Meta) (events.Position, error)
	done string // the notice shown after it
}

var (
	disableEndpoint = endpointCommand{func(s *Server, ctx context.Context, a, e int64, m commands.Meta) (events.Position, error) {
		return s.Apps.SetEndpointEnabled(ctx, a, e, false, m)
	}, "disabled: it gets no new deliveries"}
	enableEndpoint = endpointCommand{func(s *Server, ctx context.Context, a, e int64, m commands.Meta) (events.Position, error) {
		return s.Apps.SetEndpointEnabled(ctx, a, e, true, m)
	}, "enabled"}
	deleteEndpoint = endpointCommand{func(s *Server, ctx context.Context, a, e int64, m commands.Meta) (events.Position, error) {
		return s.Apps.RemoveEndpoint(ctx, a, e, m)
	}, "deleted"}
	activateEndpointSecret = endpointCommand{func(s *Server, ctx context.Context, a, e int64, m commands.Meta) (events.Position, error) {
		return s.Apps.ActivateEndpointSecret(ctx, a, e, m)
	}, "now signs with its new secret"}
	sendTestEvent = endpointCommand{func(s *Server, ctx context.Context, a, e int64, m commands.Meta) (events.Position, error) {
		return s.Apps.SendTestEvent(ctx, a, e, m)
	}, "was sent a test event; see its delivery log"}
)

// endpointAction runs one endpoint command from a form button and goes
// back to the endpoint list with a notice.
func (s *Server) endpointAction(c endpointCommand) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		app, ep, ok := s.ownedEndpoint(r)
		if !ok {
			s.NotFound(w, r)
			return
		}
		pos, err := c.run(s, r.Context(), app.AppID, ep.EndpointID, Meta(w, r))
		if err != nil {
			s.Fail(w, r, err)
			return
		}
		s.waitApps(r.Context(), pos)
		s.Redirect(w, r, endpointsPath(app.AppID), Flash{Kind: "info", Message: "Endpoint " + strconv.FormatInt(ep.EndpointID, 10) + " " + c.done + "."})
	}
}

func (s *Server) rotateEndpointSecret(w http.ResponseWriter, r *http.Request) {
	app, ep, ok := s.ownedEndpoint(r)
	if !ok {
		s.NotFound(w, r)
		return
	}
	secret, pos, err := s.Apps.RotateEndpointSecret(r.Context(), app.AppID, ep.EndpointID, Meta(w, r))
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.waitApps(r.Context(), pos)
	s.showSecret(w, r, app, ep.EndpointID, secret, true)
}

// deliveryRow is one delivery of the log with its attempts.
type deliveryRow struct {
	projections.Delivery
	Attempts []attemptRow
	Erased   bool
}

type attemptRow struct {
	projections.Attempt
	Failure string // the class's fixed text; partners never see raw transport errors
}

type deliveriesData struct {
	App      domain.App
	Endpoint endpointView
	Filter   url.Values
	Statuses []string
	Rows     []deliveryRow
	Next     string // query of the next page, "" on the last
	Errors   map[string][]string
	Zone     string         // the zone times show in and the filter reads
	Health   endpointHealth // the last 24 hours, drawn
}

// logPageSize is how many deliveries one page of the log shows.
const logPageSize = 20

// deliveryStatuses are the statuses the log's filter offers.
var deliveryStatuses = []string{domain.DeliveryPending, domain.DeliveryRetrying, domain.DeliveryDelivered,
	domain.DeliveryAbandoned, domain.DeliveryDeadLetter, domain.DeliverySkipped}

// logFilter reads the log's filters: status, exact event type, and a time
// range of creation in the portal's zone (from inclusive, to exclusive), plus the page
// cursor ("before": the log lists newest first, each page older than the last).
func logFilter(q url.Values, loc *time.Location) (domain.DeliveryFilter, error) {
	f := domain.DeliveryFilter{Status: q.Get("status"), EventType: strings.TrimSpace(q.Get("event")), Limit: logPageSize, Newest: true}
	v := &domain.ValidationError{}
	if f.Status != "" && !contains(deliveryStatuses, f.Status) {
		v.Add("status", "must be one of "+strings.Join(deliveryStatuses, ", "))
	}
	if len(f.EventType) > 100 {
		v.Add("event", "must be at most 100 characters")
	}
	for _, t := range []struct {
		field string
		to    *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		raw := strings.TrimSpace(q.Get(t.field))
		if raw == "" {
			continue
		}
		at, err := parseIn(raw, loc)
		if err != nil {
			v.Add(t.field, "must be a time such as 2026-11-23T16:00 ("+loc.String()+")")
			continue
		}
		*t.to = at
	}
	if before := q.Get("before"); before != "" {
		pos, ok := httpapi.ParseCursor(before)
		if !ok {
			v.Add("before", "must be a cursor of this log")
		}
		f.Before = pos
	}
	return f, v.Err()
}

func parseIn(raw string, loc *time.Location) (time.Time, error) {
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339, "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, raw, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("not a time")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (s *Server) deliveriesPage(w http.ResponseWriter, r *http.Request) {
	app, ep, ok := s.ownedEndpoint(r)
	if !ok {
		s.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	data := deliveriesData{App: app, Endpoint: viewEndpoint(ep), Filter: q, Statuses: deliveryStatuses, Zone: s.ZoneName()}
	f, err := logFilter(q, s.zone())
	if errs := FieldErrors(err); errs != nil {
		data.Errors = errs
		s.Render(w, r, http.StatusBadRequest, "endpoints_deliveries.html", data)
		return
	}
	f.AppID, f.EndpointID = app.AppID, &ep.EndpointID
	if data.Health, err = s.health(r.Context(), app.AppID, ep.EndpointID); err != nil {
		s.Fail(w, r, err)
		return
	}
	// Each row is read by id, body and attempts together, so the list
	// reads no body: a final delivery's body is in the log, and would be
	// read twice.
	f.WithoutBodies = true
	list, err := s.ReadModel.Deliveries(r.Context(), f)
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	for _, listed := range list {
		d, attempts, err := s.ReadModel.Delivery(r.Context(), app.AppID, listed.DeliveryID)
		if err != nil {
			s.Fail(w, r, err)
			return
		}
		row := deliveryRow{Delivery: d, Erased: len(d.Body) == 0}
		for _, a := range attempts {
			ar := attemptRow{Attempt: a}
			if a.ErrorClass != nil {
				ar.Failure = domain.ErrorClassMessages[*a.ErrorClass]
			}
			row.Attempts = append(row.Attempts, ar)
		}
		data.Rows = append(data.Rows, row)
	}
	if len(list) == f.Limit {
		next := url.Values{}
		for k, v := range q {
			next[k] = v
		}
		next.Set("before", httpapi.FormatCursor(list[len(list)-1].Cursor))
		data.Next = next.Encode()
	}
	s.Render(w, r, http.StatusOK, "endpoints_deliveries.html", data)
}

func (s *Server) resendDelivery(w http.ResponseWriter, r *http.Request) {
	app, ep, ok := s.ownedEndpoint(r)
	if !ok {
		s.NotFound(w, r)
		return
	}
	id := r.PathValue("deliveryId")
	d, _, err := s.ReadModel.Delivery(r.Context(), app.AppID, id)
	if errors.Is(err, projections.ErrNotFound) || (err == nil && d.EndpointID != ep.EndpointID) {
		s.NotFound(w, r) // another app's or another endpoint's delivery looks missing
		return
	}
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	logPath := endpointsPath(app.AppID) + "/" + strconv.FormatInt(ep.EndpointID, 10) + "/deliveries"
	if len(d.Body) == 0 {
		s.Redirect(w, r, logPath, Flash{Kind: "error", Message: "Delivery " + id + " cannot be resent: its user was erased."})
		return
	}
	pos, err := s.Dispatcher.Resend(r.Context(), app.AppID, id, Meta(w, r).Actor)
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	msg := "Delivery " + id + " is already waiting for its attempt."
	if !pos.IsZero() {
		msg = "Delivery " + id + " was queued again."
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		_ = s.Dispatcher.Projected.WaitFor(ctx, pos)
		cancel()
	}
	s.Redirect(w, r, logPath, Flash{Kind: "info", Message: msg})
}

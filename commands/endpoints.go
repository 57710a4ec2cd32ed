package commands

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

// KindEndpoint is the id kind of webhook endpoints added beside an app's
// default one (which is domain.DefaultEndpointID).
const KindEndpoint = "webhook_endpoint"

// endpointState is what endpoint decisions need of one added endpoint.
type endpointState struct {
	url      string
	events   []string
	disabled bool
	pending  bool // a rotated secret awaits activation
	// description is the partner's note (the default endpoint's is
	// appState.hookDescription).
	description string
}

// applyEndpoint folds the endpoint events into the app's state.
func (s *appState) applyEndpoint(env events.Envelope) {
	if s.endpoints == nil {
		s.endpoints = map[int64]*endpointState{}
	}
	switch p := env.Payload.(type) {
	case *catalog.AppWebhookEndpointAdded:
		s.endpoints[p.EndpointID] = &endpointState{url: p.URL, events: p.Events, description: p.Description}
	case *catalog.AppWebhookEndpointUpdated:
		if e := s.endpoints[p.EndpointID]; e != nil {
			e.url, e.events = p.URL, p.Events
		}
	case *catalog.AppWebhookEndpointDescribed:
		if p.EndpointID == domain.DefaultEndpointID {
			s.hookDescription = p.Description
		} else if e := s.endpoints[p.EndpointID]; e != nil {
			e.description = p.Description
		}
	case *catalog.AppWebhookEndpointDisabled:
		s.setDisabled(p.EndpointID, true)
	case *catalog.AppWebhookEndpointEnabled:
		s.setDisabled(p.EndpointID, false)
	case *catalog.AppWebhookEndpointRemoved:
		delete(s.endpoints, p.EndpointID)
	case *catalog.AppWebhookEndpointSecretIssued:
		if e := s.endpoints[p.EndpointID]; e != nil {
			e.pending = true
		}
	case *catalog.AppWebhookEndpointSecretActivated:
		if e := s.endpoints[p.EndpointID]; e != nil {
			e.pending = false
		}
	}
}

func (s *appState) setDisabled(id int64, disabled bool) {
	if id == domain.DefaultEndpointID {
		s.hookDisabled = disabled
	} else if e := s.endpoints[id]; e != nil {
		e.disabled = disabled
	}
}

// endpoint is the state of an endpoint of the app, the default one
// included (found only while it has a URL), or ErrEndpointNotFound.
func (s *appState) endpoint(id int64) (endpointState, error) {
	if err := s.found(); err != nil {
		return endpointState{}, err
	}
	if id == domain.DefaultEndpointID {
		if s.webhookURL == "" {
			return endpointState{}, domain.ErrEndpointNotFound
		}
		return endpointState{url: s.webhookURL, events: s.webhookEvents, disabled: s.hookDisabled, pending: s.pendingHook, description: s.hookDescription}, nil
	}
	if e := s.endpoints[id]; e != nil {
		return *e, nil
	}
	return endpointState{}, domain.ErrEndpointNotFound
}

// endpointCount counts the app's endpoints, the default one while it has a URL.
func (s *appState) endpointCount() int {
	n := len(s.endpoints)
	if s.webhookURL != "" {
		n++
	}
	return n
}

// EndpointInput is a developer's or operator's endpoint settings: a public
// HTTPS URL and the events it subscribes to (none: every event).
type EndpointInput struct {
	URL    string
	Events []string
	// Description is the partner's note of what the endpoint is for
	// (checkDescription).
	Description string
}

// validateEndpoint vets an endpoint's URL (WebhookURLCheck) and subscription.
func (a *Apps) validateEndpoint(ctx context.Context, in EndpointInput) error {
	v := &domain.ValidationError{}
	if in.URL == "" {
		v.Add("url", "is required")
	} else if err := validateWebhookURL(ctx, in.URL, a.checkURL); err != nil {
		v.Add("url", err.Error())
	}
	validateEvents("events", in.Events, v)
	checkDescription(in.Description, v)
	return v.Err()
}

// checkDescription accepts an endpoint description of at most
// domain.MaxEndpointDescription characters of one line of text: valid
// UTF-8 without control characters (a label shown in lists and pages, so
// no line breaks either).
func checkDescription(d string, v *domain.ValidationError) {
	if !utf8.ValidString(d) || strings.IndexFunc(d, unicode.IsControl) >= 0 {
		v.Add("description", "must be text without control characters or line breaks")
	} else if utf8.RuneCountInString(d) > domain.MaxEndpointDescription {
		v.Add("description", fmt.Sprintf("must be at most %d characters", domain.MaxEndpointDescription))
	}
}

func validateEvents(field string, evs []string, v *domain.ValidationError) {
	if len(evs) > 50 {
		v.Add(field, "must name at most 50 events")
		return
	}
	for i, e := range evs {
		if !eventPattern.MatchString(e) || len(e) > 100 {
			v.Add(fmt.Sprintf("%s[%d]", field, i), "must be an event name such as user.profile.updated or a prefix wildcard such as health.report.*")
		}
	}
}

// NewEndpoint is an added endpoint with the secret it signs with, shown once.
type NewEndpoint struct {
	EndpointID    int64
	WebhookSecret string
	Position      events.Position
}

// AddEndpoint adds a webhook endpoint to an app under a fresh id, with its
// own secret (returned once). An app without a default endpoint URL gets
// an added endpoint all the same; the default one stays as it is.
func (a *Apps) AddEndpoint(ctx context.Context, appID int64, in EndpointInput, meta Meta) (NewEndpoint, error) {
	if err := a.validateEndpoint(ctx, in); err != nil {
		return NewEndpoint{}, err
	}
	secret := secrets.Random("whsec_", 24)
	sealed, err := a.sealer.Seal(secret)
	if err != nil {
		return NewEndpoint{}, err
	}
	var id int64
	pos, err := a.decide(ctx, appID, meta, func(st *appState) (events.Payload, error) {
		if err := st.found(); err != nil {
			return nil, err
		}
		if id == 0 { // allocated once, after the app is known to exist
			if id, err = a.ids.Next(ctx, KindEndpoint); err != nil {
				return nil, err
			}
		}
		return decideAddEndpoint(st, id, in, sealed)
	})
	if err != nil {
		return NewEndpoint{}, err
	}
	return NewEndpoint{EndpointID: id, WebhookSecret: secret, Position: pos}, nil
}

// decideAddEndpoint adds the endpoint unless the app has MaxEndpoints.
func decideAddEndpoint(st *appState, id int64, in EndpointInput, sealed string) (events.Payload, error) {
	if err := st.found(); err != nil {
		return nil, err
	}
	if st.endpointCount() >= domain.MaxEndpoints {
		return nil, domain.ErrTooManyEndpoints
	}
	return catalog.AppWebhookEndpointAdded{AppID: st.appID, EndpointID: id, URL: in.URL, Events: in.Events, SealedWebhookSecret: sealed,
		Description: in.Description}, nil
}

// decideUpdateEndpoint records the endpoint's settings after the change
// (ChangeEndpoint); no difference decides nothing. The default endpoint is
// changed as PATCH /admin/v1/apps/:appId changes it (app.webhook_configured),
// except that its URL cannot be emptied here (RemoveEndpoint does that).
func decideUpdateEndpoint(st *appState, id int64, s WebhookSettings) (events.Payload, error) {
	e, err := st.endpoint(id)
	if err != nil {
		return nil, err
	}
	if id == domain.DefaultEndpointID {
		return decideConfigureWebhook(st, s)
	}
	next := catalog.AppWebhookEndpointUpdated{AppID: st.appID, EndpointID: id, URL: e.url, Events: e.events}
	if s.URL.Set {
		next.URL = s.URL.Value
	}
	if s.Events.Set {
		next.Events = s.Events.Value
	}
	if next.URL == e.url && slices.Equal(next.Events, e.events) {
		return nil, nil
	}
	return next, nil
}

// SetEndpointEnabled enables or disables an endpoint; a disabled endpoint
// gets no new deliveries. Asking for the state it is in changes nothing.
func (a *Apps) SetEndpointEnabled(ctx context.Context, appID, endpointID int64, enabled bool, meta Meta) (events.Position, error) {
	return a.decide(ctx, appID, meta, func(st *appState) (events.Payload, error) { return decideSetEndpointEnabled(st, endpointID, enabled) })
}

// decideSetEndpointEnabled flips an endpoint's state when it differs.
func decideSetEndpointEnabled(st *appState, id int64, enabled bool) (events.Payload, error) {
	e, err := st.endpoint(id)
	if err != nil || e.disabled == !enabled {
		return nil, err
	}
	if enabled {
		return catalog.AppWebhookEndpointEnabled{AppID: st.appID, EndpointID: id}, nil
	}
	return catalog.AppWebhookEndpointDisabled{AppID: st.appID, EndpointID: id}, nil
}

// RemoveEndpoint deletes an endpoint. The default endpoint loses its URL
// and subscription (as PATCH with webhook_url null does): events still
// reach the app's feed.
func (a *Apps) RemoveEndpoint(ctx context.Context, appID, endpointID int64, meta Meta) (events.Position, error) {
	return a.decide(ctx, appID, meta, func(st *appState) (events.Payload, error) { return decideRemoveEndpoint(st, endpointID) })
}

// decideRemoveEndpoint removes an endpoint the app has.
func decideRemoveEndpoint(st *appState, id int64) (events.Payload, error) {
	if _, err := st.endpoint(id); err != nil {
		return nil, err
	}
	if id == domain.DefaultEndpointID {
		return catalog.AppWebhookConfigured{AppID: st.appID}, nil
	}
	return catalog.AppWebhookEndpointRemoved{AppID: st.appID, EndpointID: id}, nil
}

// RotateEndpointSecret issues a pending secret for an endpoint, returned
// once; the active one keeps signing until ActivateEndpointSecret, so the
// receiver can install the new one first (the same overlap as the default
// endpoint's webhook-secret routes, which this calls for endpoint 0).
func (a *Apps) RotateEndpointSecret(ctx context.Context, appID, endpointID int64, meta Meta) (string, events.Position, error) {
	secret := secrets.Random("whsec_", 24)
	sealed, err := a.sealer.Seal(secret)
	if err != nil {
		return "", events.Position{}, err
	}
	pos, err := a.decide(ctx, appID, meta, func(st *appState) (events.Payload, error) { return decideRotateEndpointSecret(st, endpointID, sealed) })
	if err != nil {
		return "", events.Position{}, err
	}
	return secret, pos, nil
}

// decideRotateEndpointSecret records the sealed secret as the endpoint's pending one.
func decideRotateEndpointSecret(st *appState, id int64, sealed string) (events.Payload, error) {
	if _, err := st.endpoint(id); err != nil {
		return nil, err
	}
	if id == domain.DefaultEndpointID {
		return decideRotateWebhookSecret(st, sealed)
	}
	return catalog.AppWebhookEndpointSecretIssued{AppID: st.appID, EndpointID: id, SealedPendingWebhookSecret: sealed}, nil
}

// ActivateEndpointSecret makes an endpoint's pending secret the one that
// signs (ErrNoPendingWebhookSecret without one).
func (a *Apps) ActivateEndpointSecret(ctx context.Context, appID, endpointID int64, meta Meta) (events.Position, error) {
	return a.decide(ctx, appID, meta, func(st *appState) (events.Payload, error) { return decideActivateEndpointSecret(st, endpointID) })
}

// decideActivateEndpointSecret activates the pending secret.
func decideActivateEndpointSecret(st *appState, id int64) (events.Payload, error) {
	e, err := st.endpoint(id)
	if err != nil {
		return nil, err
	}
	if !e.pending {
		return nil, domain.ErrNoPendingWebhookSecret
	}
	if id == domain.DefaultEndpointID {
		return catalog.AppWebhookSecretActivated{AppID: st.appID}, nil
	}
	return catalog.AppWebhookEndpointSecretActivated{AppID: st.appID, EndpointID: id}, nil
}

// SendTestEvent asks for one webhook.test delivery to an enabled endpoint;
// the dispatcher creates and sends it like any other delivery.
func (a *Apps) SendTestEvent(ctx context.Context, appID, endpointID int64, meta Meta) (events.Position, error) {
	return a.decide(ctx, appID, meta, func(st *appState) (events.Payload, error) { return decideSendTestEvent(st, endpointID) })
}

// decideSendTestEvent requests the test delivery; every request is a new one.
func decideSendTestEvent(st *appState, id int64) (events.Payload, error) {
	e, err := st.endpoint(id)
	if err != nil {
		return nil, err
	}
	if e.disabled {
		return nil, domain.ErrEndpointDisabled
	}
	return catalog.AppWebhookTestRequested{AppID: st.appID, EndpointID: id}, nil
}

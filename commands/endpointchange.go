package commands

import (
	"context"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

// EndpointChange is a partner's change of one endpoint: any of its URL,
// subscription and state; fields not sent (and a null state) keep their value.
type EndpointChange struct {
	Settings WebhookSettings
	Enabled  domain.Field[bool]
	// Description replaces the endpoint's description when set ("" or
	// null clears it).
	Description domain.Field[string]
}

// validateEndpointChange vets the fields sent, as the portal's form is vetted.
func (a *Apps) validateEndpointChange(ctx context.Context, ch EndpointChange) error {
	v := &domain.ValidationError{}
	if u := ch.Settings.URL.Ptr(); u != nil || ch.Settings.URL.Null {
		if u == nil || *u == "" {
			v.Add("url", "is required")
		} else if err := validateWebhookURL(ctx, *u, a.checkURL); err != nil {
			v.Add("url", err.Error())
		}
	}
	validateEvents("events", ch.Settings.Events.Value, v)
	checkDescription(ch.Description.Value, v)
	return v.Err()
}

// AddEndpointWithState adds an endpoint as AddEndpoint does and, when
// enabled is false, disables it in the same append, so the endpoint never
// receives a delivery before the partner turns it on.
func (a *Apps) AddEndpointWithState(ctx context.Context, appID int64, in EndpointInput, enabled bool, meta Meta) (NewEndpoint, error) {
	if err := a.validateEndpoint(ctx, in); err != nil {
		return NewEndpoint{}, err
	}
	secret := secrets.Random("whsec_", 24)
	sealed, err := a.sealer.Seal(secret)
	if err != nil {
		return NewEndpoint{}, err
	}
	var id int64
	meta.AppID = appID
	pos, err := execute(ctx, a.streams, replay[*appState]{func() *appState { return &appState{} }}, domain.AppStream(appID), &meta, func(st *appState) ([]events.Payload, error) {
		if err := st.found(); err != nil {
			return nil, err
		}
		if id == 0 { // allocated once, after the app is known to exist
			if id, err = a.ids.Next(ctx, KindEndpoint); err != nil {
				return nil, err
			}
		}
		added, err := decideAddEndpoint(st, id, in, sealed)
		if err != nil {
			return nil, err
		}
		if enabled {
			return []events.Payload{added}, nil
		}
		return []events.Payload{added, catalog.AppWebhookEndpointDisabled{AppID: st.appID, EndpointID: id}}, nil
	})
	if err != nil {
		return NewEndpoint{}, err
	}
	return NewEndpoint{EndpointID: id, WebhookSecret: secret, Position: pos}, nil
}

// ChangeEndpoint applies a partner's change of one endpoint (the default
// one included) in one append: the new settings, then the new state. A
// change that changes nothing appends nothing.
func (a *Apps) ChangeEndpoint(ctx context.Context, appID, endpointID int64, ch EndpointChange, meta Meta) (events.Position, error) {
	if err := a.validateEndpointChange(ctx, ch); err != nil {
		return events.Position{}, err
	}
	meta.AppID = appID
	return execute(ctx, a.streams, replay[*appState]{func() *appState { return &appState{} }}, domain.AppStream(appID), &meta, func(st *appState) ([]events.Payload, error) {
		return decideChangeEndpoint(st, endpointID, ch)
	})
}

func decideChangeEndpoint(st *appState, id int64, ch EndpointChange) ([]events.Payload, error) {
	if id == domain.DefaultEndpointID && st.webhookURL == "" && ch.Settings.URL.Ptr() != nil {
		out, err := decideDefaultEndpointURL(st, ch)
		if err != nil || !ch.Description.Set || ch.Description.Value == st.hookDescription {
			return out, err
		}
		return append(out, catalog.AppWebhookEndpointDescribed{AppID: st.appID, EndpointID: id, Description: ch.Description.Value}), nil
	}
	var out []events.Payload
	settings, err := decideUpdateEndpoint(st, id, ch.Settings)
	if err != nil {
		return nil, err
	}
	if settings != nil {
		out = append(out, settings)
	}
	if ch.Enabled.Set && !ch.Enabled.Null {
		state, err := decideSetEndpointEnabled(st, id, ch.Enabled.Value)
		if err != nil {
			return nil, err
		}
		if state != nil {
			out = append(out, state)
		}
	}
	if ch.Description.Set {
		e, err := st.endpoint(id)
		if err != nil {
			return nil, err
		}
		if e.description != ch.Description.Value {
			out = append(out, catalog.AppWebhookEndpointDescribed{AppID: st.appID, EndpointID: id, Description: ch.Description.Value})
		}
	}
	return out, nil
}

// decideDefaultEndpointURL gives the default endpoint a URL while it has
// none (an app created without webhook_url): it is the app's webhook, so
// it exists before it has a URL, signed with the app's webhook secret.
func decideDefaultEndpointURL(st *appState, ch EndpointChange) ([]events.Payload, error) {
	configured, err := decideConfigureWebhook(st, ch.Settings)
	if err != nil {
		return nil, err
	}
	out := []events.Payload{configured}
	if ch.Enabled.Set && !ch.Enabled.Null && st.hookDisabled == ch.Enabled.Value {
		if ch.Enabled.Value {
			out = append(out, catalog.AppWebhookEndpointEnabled{AppID: st.appID, EndpointID: domain.DefaultEndpointID})
		} else {
			out = append(out, catalog.AppWebhookEndpointDisabled{AppID: st.appID, EndpointID: domain.DefaultEndpointID})
		}
	}
	return out, nil
}

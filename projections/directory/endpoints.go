package directory

import (
	"fmt"
	"slices"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// applyEndpoint applies the webhook endpoint events to the directory (the
// caller holds the lock). Apps are copied on write, as Apply does, so a
// domain.App handed out earlier never changes under its reader.
func (a *Apps) applyEndpoint(p events.Payload, at time.Time) error {
	var appID, endpointID int64
	var change func(app *domain.App, eps []domain.Endpoint, i int) ([]domain.Endpoint, error)
	switch p := p.(type) {
	case *catalog.AppWebhookEndpointAdded:
		appID, endpointID = p.AppID, p.EndpointID
		change = func(_ *domain.App, eps []domain.Endpoint, i int) ([]domain.Endpoint, error) {
			secret, err := a.opener.Open(p.SealedWebhookSecret)
			if err != nil {
				return nil, fmt.Errorf("app %d endpoint %d: %w", p.AppID, p.EndpointID, err)
			}
			e := domain.Endpoint{EndpointID: p.EndpointID, URL: p.URL, Events: p.Events, Secret: secret, Description: p.Description, CreatedAt: at, UpdatedAt: at}
			if i >= 0 {
				eps[i] = e
				return eps, nil
			}
			eps = append(eps, e)
			slices.SortFunc(eps, func(x, y domain.Endpoint) int { return int(x.EndpointID - y.EndpointID) })
			return eps, nil
		}
	case *catalog.AppWebhookEndpointUpdated:
		appID, endpointID = p.AppID, p.EndpointID
		change = func(_ *domain.App, eps []domain.Endpoint, i int) ([]domain.Endpoint, error) {
			if i >= 0 {
				eps[i].URL, eps[i].Events, eps[i].UpdatedAt = p.URL, p.Events, at
			}
			return eps, nil
		}
	case *catalog.AppWebhookEndpointDescribed:
		appID, endpointID = p.AppID, p.EndpointID
		change = func(app *domain.App, eps []domain.Endpoint, i int) ([]domain.Endpoint, error) {
			if p.EndpointID == domain.DefaultEndpointID {
				app.WebhookDescription = p.Description
			} else if i >= 0 {
				eps[i].Description, eps[i].UpdatedAt = p.Description, at
			}
			return eps, nil
		}
	case *catalog.AppWebhookEndpointDisabled:
		appID, endpointID = p.AppID, p.EndpointID
		change = setDisabled(p.EndpointID, true, at)
	case *catalog.AppWebhookEndpointEnabled:
		appID, endpointID = p.AppID, p.EndpointID
		change = setDisabled(p.EndpointID, false, at)
	case *catalog.AppWebhookEndpointRemoved:
		appID, endpointID = p.AppID, p.EndpointID
		change = func(_ *domain.App, eps []domain.Endpoint, i int) ([]domain.Endpoint, error) {
			if i >= 0 {
				eps = slices.Delete(eps, i, i+1)
			}
			return eps, nil
		}
	case *catalog.AppWebhookEndpointSecretIssued:
		appID, endpointID = p.AppID, p.EndpointID
		change = func(_ *domain.App, eps []domain.Endpoint, i int) ([]domain.Endpoint, error) {
			if i < 0 {
				return eps, nil
			}
			pending, err := a.opener.Open(p.SealedPendingWebhookSecret)
			if err != nil {
				return nil, fmt.Errorf("app %d endpoint %d: %w", p.AppID, p.EndpointID, err)
			}
			eps[i].PendingSecret, eps[i].UpdatedAt = pending, at
			return eps, nil
		}
	case *catalog.AppWebhookEndpointSecretActivated:
		appID, endpointID = p.AppID, p.EndpointID
		change = func(_ *domain.App, eps []domain.Endpoint, i int) ([]domain.Endpoint, error) {
			if i >= 0 && eps[i].PendingSecret != "" {
				eps[i].Secret, eps[i].PendingSecret, eps[i].UpdatedAt = eps[i].PendingSecret, "", at
			}
			return eps, nil
		}
	default:
		return nil
	}
	app, ok := a.byID[appID]
	if !ok {
		return nil
	}
	next := *app
	eps := slices.Clone(app.Endpoints)
	i := slices.IndexFunc(eps, func(e domain.Endpoint) bool { return e.EndpointID == endpointID })
	eps, err := change(&next, eps, i)
	if err != nil {
		return err
	}
	next.Endpoints, next.UpdatedAt = eps, at
	a.byID[appID] = &next
	return nil
}

// setDisabled disables or enables an endpoint; endpoint 0 is the default one.
func setDisabled(id int64, disabled bool, at time.Time) func(*domain.App, []domain.Endpoint, int) ([]domain.Endpoint, error) {
	return func(app *domain.App, eps []domain.Endpoint, i int) ([]domain.Endpoint, error) {
		if id == domain.DefaultEndpointID {
			app.WebhookDisabled = disabled
		} else if i >= 0 {
			eps[i].Disabled, eps[i].UpdatedAt = disabled, at
		}
		return eps, nil
	}
}

package portal

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/projections"
)

// Service-provider pages: a developer registers an
// organisation (name, type, contact) for one of their applications, whose
// credentials it will verify benefit uses with, and follows its review;
// operators approve or reject it with a reason and set its allowed benefit
// items at /portal/ops/providers. The same commands as the partner and
// admin APIs (commands.Benefits), with the developer or operator as actor.
func init() { addRoutes(registerProviders) }

func registerProviders(s *Server) {
	s.Developer("GET /portal/providers", s.providerList)
	s.Developer("POST /portal/providers", s.providerRegister)
	s.Developer("GET /portal/providers/{providerId}", s.providerPage)
	s.Operator("GET /portal/ops/providers", s.opsProviders)
	s.Operator("POST /portal/ops/providers/{providerId}/review", s.opsReviewProvider)
	s.Operator("POST /portal/ops/providers/{providerId}/items", s.opsProviderItems)
}

// providerTypes are the organisation types a registration may name.
var providerTypes = []string{commands.ProviderHealthStation, commands.ProviderService, commands.ProviderChannelPartner}

// waitBenefits waits (bounded) until the benefits read model has applied
// pos, so the page after a write shows it.
func (s *Server) waitBenefits(ctx context.Context, pos events.Position) {
	if s.BenefitsReady == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = s.BenefitsReady.WaitFor(ctx, pos)
}

// usableApps are the developer's apps a provider may be registered for:
// not retired (a retired app's credentials are refused).
func (s *Server) usableApps(developerID int64) []domain.App {
	return slices.DeleteFunc(s.AppDirectory.ByDeveloper(developerID), func(a domain.App) bool { return a.Retired })
}

func (s *Server) providerList(w http.ResponseWriter, r *http.Request) {
	dev, _ := SignedInDeveloper(r)
	ps, err := s.ReadModel.DeveloperProviders(r.Context(), dev.ID)
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.renderProviders(w, r, http.StatusOK, dev.ID, ps, map[string]any{})
}

func (s *Server) renderProviders(w http.ResponseWriter, r *http.Request, status int, developerID int64, ps []projections.ServiceProvider, form map[string]any) {
	form["Types"], form["Apps"] = providerTypes, s.usableApps(developerID)
	s.Render(w, r, status, "providers_list.html", map[string]any{
		"Providers": ps, "Form": form, "ReviewDays": ProviderReviewDays,
	})
}

func (s *Server) providerRegister(w http.ResponseWriter, r *http.Request) {
	dev, _ := SignedInDeveloper(r)
	if err := r.ParseForm(); err != nil {
		s.ErrorPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	f := r.PostForm
	in := commands.ProviderInput{
		Name: strings.TrimSpace(f.Get("name")), Type: f.Get("type"), Contact: strings.TrimSpace(f.Get("contact")), DeveloperID: dev.ID,
	}
	if pc := strings.TrimSpace(f.Get("points_code")); pc != "" {
		in.PointsCode = &pc
	}
	v := &domain.ValidationError{}
	appID, err := strconv.ParseInt(f.Get("app_id"), 10, 64)
	if err != nil || !slices.ContainsFunc(s.usableApps(dev.ID), func(a domain.App) bool { return a.AppID == appID }) {
		// Only the developer's own apps: another id answers like no choice.
		v.Add("app_id", "choose one of your applications")
	}
	in.AppID = appID
	var id int64
	var pos events.Position
	if err = v.Err(); err == nil {
		id, pos, err = s.Benefits.RegisterProvider(r.Context(), in, Meta(w, r))
	}
	if err != nil {
		fields := FieldErrors(err)
		if fields == nil {
			s.Fail(w, r, err)
			return
		}
		ps, rerr := s.ReadModel.DeveloperProviders(r.Context(), dev.ID)
		if rerr != nil {
			s.Fail(w, r, rerr)
			return
		}
		s.renderProviders(w, r, http.StatusBadRequest, dev.ID, ps, map[string]any{
			"Name": in.Name, "Type": in.Type, "Contact": in.Contact, "PointsCode": f.Get("points_code"), "AppID": appID, "Errors": fields,
		})
		return
	}
	s.waitBenefits(r.Context(), pos)
	s.Redirect(w, r, "/portal/providers/"+strconv.FormatInt(id, 10), Flash{Kind: "info",
		Message: "Registration submitted. Platform review usually takes " + strconv.Itoa(ProviderReviewDays) + " business days."})
}

// ownProvider finds the signed-in developer's provider by the URL's id;
// anything else is false, answered with the one 404 page.
func (s *Server) ownProvider(r *http.Request) (projections.ServiceProvider, bool, error) {
	dev, ok := SignedInDeveloper(r)
	if !ok {
		return projections.ServiceProvider{}, false, nil
	}
	id, err := strconv.ParseInt(r.PathValue("providerId"), 10, 64)
	if err != nil || id <= 0 {
		return projections.ServiceProvider{}, false, nil
	}
	ps, err := s.ReadModel.DeveloperProviders(r.Context(), dev.ID)
	if err != nil {
		return projections.ServiceProvider{}, false, err
	}
	i := slices.IndexFunc(ps, func(p projections.ServiceProvider) bool { return p.ProviderID == id })
	if i < 0 {
		return projections.ServiceProvider{}, false, nil
	}
	return ps[i], true, nil
}

func (s *Server) providerPage(w http.ResponseWriter, r *http.Request) {
	p, ok, err := s.ownProvider(r)
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	if !ok {
		s.NotFound(w, r)
		return
	}
	items, err := s.ReadModel.BenefitItems(r.Context())
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.Render(w, r, http.StatusOK, "providers_page.html", map[string]any{
		"Provider": p, "Items": itemNames(items, p.AllowedItemIDs), "ReviewDays": ProviderReviewDays,
	})
}

// itemNames names the allowed benefit items, in id order.
func itemNames(items []projections.BenefitItem, ids []int64) []projections.BenefitItem {
	var out []projections.BenefitItem
	for _, it := range items {
		if slices.Contains(ids, it.BenefitItemID) {
			out = append(out, it)
		}
	}
	return out
}

// opsProvider is a provider on the operators' page with its item choices.
type opsProvider struct {
	projections.ServiceProvider
	Items []itemChoice
}

// itemChoice is one option of the allowed-items multi-select.
type itemChoice struct {
	projections.BenefitItem
	Selected bool
}

func (s *Server) opsProviders(w http.ResponseWriter, r *http.Request) {
	ps, err := s.ReadModel.Providers(r.Context(), 0)
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	items, err := s.ReadModel.BenefitItems(r.Context())
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	// Pending registrations first, then the rest, each in id order.
	slices.SortStableFunc(ps, func(a, b projections.ServiceProvider) int {
		return boolRank(a.Status != commands.ProviderPending) - boolRank(b.Status != commands.ProviderPending)
	})
	out := make([]opsProvider, len(ps))
	for i, p := range ps {
		// The contact is a person's name or phone: operators see it
		// redacted here; an auditor reveals it with a reason through
		// GET /admin/v1/service-providers?reveal=true (an audit fact).
		if p.Contact != "" {
			p.Contact = catalog.Redacted
		}
		out[i].ServiceProvider = p
		for _, it := range items {
			out[i].Items = append(out[i].Items, itemChoice{BenefitItem: it, Selected: slices.Contains(p.AllowedItemIDs, it.BenefitItemID)})
		}
	}
	s.Render(w, r, http.StatusOK, "ops_providers.html", map[string]any{"Providers": out})
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// providerID reads the URL's provider id; malformed is a 404 page.
func providerID(r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("providerId"), 10, 64)
	return id, err == nil && id > 0
}

func (s *Server) opsReviewProvider(w http.ResponseWriter, r *http.Request) {
	id, ok := providerID(r)
	if !ok {
		s.NotFound(w, r)
		return
	}
	if err := mayReview(r, "/admin/v1/service-providers/"+strconv.FormatInt(id, 10)+"/review"); err != nil {
		s.Fail(w, r, err)
		return
	}
	if err := r.ParseForm(); err != nil {
		s.ErrorPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	approve, err := decision(r.PostForm.Get("decision"))
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	notes, meta := strings.TrimSpace(r.PostForm.Get("reason")), Meta(w, r)
	pos, err := s.Benefits.ReviewProvider(r.Context(), id, approve, notes, meta)
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.waitBenefits(r.Context(), pos)
	verb := "rejected"
	if approve {
		verb = "approved"
	}
	s.Redirect(w, r, "/portal/ops/providers", Flash{Kind: "info", Message: "Service provider " + strconv.FormatInt(id, 10) + " " + verb + "."})
}

func (s *Server) opsProviderItems(w http.ResponseWriter, r *http.Request) {
	id, ok := providerID(r)
	if !ok {
		s.NotFound(w, r)
		return
	}
	if err := mayChange(r, http.MethodPut, "/admin/v1/service-providers/"+strconv.FormatInt(id, 10)+"/benefit-items"); err != nil {
		s.Fail(w, r, err)
		return
	}
	if err := r.ParseForm(); err != nil {
		s.ErrorPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	var ids []int64
	for _, raw := range r.PostForm["allowed_benefit_item_ids"] {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			v := &domain.ValidationError{}
			v.Add("allowed_benefit_item_ids", "must be benefit item ids")
			s.Fail(w, r, v)
			return
		}
		ids = append(ids, n)
	}
	pos, err := s.Benefits.ConfigureItems(r.Context(), id, ids, Meta(w, r))
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.waitBenefits(r.Context(), pos)
	s.Redirect(w, r, "/portal/ops/providers", Flash{Kind: "info", Message: "Allowed benefit items of service provider " + strconv.FormatInt(id, 10) + " saved."})
}

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
	"github.com/healthtech/partner-open-platform/internal/auth"
)

// Application pages: a developer's apps, created in the
// sandbox with declared scopes and purpose; credentials shown once; the
// app secret rotated; the production review requested (with the host
// mini-program's app id for a host-plugin integration); and, once an
// operator approves at /portal/ops/apps, the production credentials
// revealed once, which retires the sandbox app (commands.Apps.RevealProduction).
//
// Every change is a command with the developer ("developer:<id>") or the
// operator as actor. An app that is not the signed-in developer's answers
// the same 404 page as a missing one.
func init() { addRoutes(registerApps) }

func registerApps(s *Server) {
	s.Developer("GET /portal/apps", s.appList)
	s.Developer("GET /portal/apps/new", s.appNew)
	s.Developer("POST /portal/apps", s.appCreate)
	s.Developer("GET /portal/apps/{appId}", s.appPage)
	s.Developer("POST /portal/apps/{appId}/secret", s.confirmFirst(s.askApp("Rotate the app secret",
		"The current app secret stops working at once: every client signing with it is refused until it has the new one.", "Rotate app secret"), s.appRotateSecret))
	s.Developer("POST /portal/apps/{appId}/authentication", s.appAuthentication)
	s.Developer("POST /portal/apps/{appId}/review", s.appRequestReview)
	s.Developer("POST /portal/apps/{appId}/production", s.confirmFirst(s.askApp("Reveal the production credentials",
		"They are shown once, and revealing them retires this sandbox app: its credentials stop working.", "Reveal production credentials"), s.appRevealProduction))
	s.Operator("GET /portal/ops/apps", s.opsApps)
	s.Operator("POST /portal/ops/apps/{appId}/review", s.opsReviewApp)
}

// ReviewDays and ProviderReviewDays are the review times the spec states,
// shown to developers.
const (
	ReviewDays         = 5
	ProviderReviewDays = 3
)

// ownApp finds the signed-in developer's app by the URL's id; anything
// else (malformed, missing, another developer's, an operator's) is false,
// and the caller answers the one 404 page.
func (s *Server) ownApp(r *http.Request) (domain.App, bool) {
	dev, ok := SignedInDeveloper(r)
	if !ok {
		return domain.App{}, false
	}
	id, err := strconv.ParseInt(r.PathValue("appId"), 10, 64)
	if err != nil || id <= 0 {
		return domain.App{}, false
	}
	app, found := s.AppDirectory.ByID(id)
	if !found || app.DeveloperID == 0 || app.DeveloperID != dev.ID {
		return domain.App{}, false
	}
	return app, true
}

// waitApps waits (bounded) until the app directory has applied pos, so the
// page after a write shows it.
func (s *Server) waitApps(ctx context.Context, pos events.Position) {
	if s.AppsReady == nil || pos.IsZero() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = s.AppsReady.WaitFor(ctx, pos)
}

// oneTimeSecret is what the layout's "secret" partial shows once.
type oneTimeSecret struct {
	Label string
	Value string
}

// secretsOf lists the credentials' secrets for their one showing.
func secretsOf(c commands.Credentials) []oneTimeSecret {
	var out []oneTimeSecret
	if c.AppSecret != "" {
		out = append(out, oneTimeSecret{"AppSecret", c.AppSecret})
	}
	if c.WebhookSecret != "" {
		out = append(out, oneTimeSecret{"Webhook secret", c.WebhookSecret})
	}
	return out
}

// appView is an app as its pages show it: never a secret.
type appView struct {
	domain.App
	Production *domain.App // the production app an approval created
}

func (s *Server) viewOf(app domain.App) appView {
	v := appView{App: app}
	if app.SandboxAppID != 0 {
		// The plugin app id was issued by the sandbox app's review; the
		// production app the review created shows it too.
		if sb, ok := s.AppDirectory.ByID(app.SandboxAppID); ok {
			v.PluginAppID = sb.PluginAppID
		}
	}
	if app.ProductionAppID != 0 {
		if p, ok := s.AppDirectory.ByID(app.ProductionAppID); ok {
			v.Production = &p
		}
	}
	return v
}

func (s *Server) appList(w http.ResponseWriter, r *http.Request) {
	dev, _ := SignedInDeveloper(r)
	s.Render(w, r, http.StatusOK, "apps_list.html", map[string]any{
		"Apps": s.AppDirectory.ByDeveloper(dev.ID), "Approved": dev.Approved(),
	})
}

// scopeChoice is one checkbox of the scope declaration.
type scopeChoice struct {
	Name    string
	Checked bool
}

// scopeChoices lists every scope with the checked ones ticked; nothing is
// ticked on a new form (least privilege: the developer declares each one).
func scopeChoices(checked []string) []scopeChoice {
	out := make([]scopeChoice, len(domain.Scopes))
	for i, sc := range domain.Scopes {
		out[i] = scopeChoice{Name: sc, Checked: slices.Contains(checked, sc)}
	}
	return out
}

func (s *Server) appNew(w http.ResponseWriter, r *http.Request) {
	dev, _ := SignedInDeveloper(r)
	if !dev.Approved() {
		s.ErrorPage(w, r, http.StatusForbidden, "Your developer account must pass qualification review before you create applications.")
		return
	}
	s.Render(w, r, http.StatusOK, "apps_new.html", map[string]any{"Scopes": scopeChoices(nil)})
}

func (s *Server) appCreate(w http.ResponseWriter, r *http.Request) {
	dev, _ := SignedInDeveloper(r)
	if !dev.Approved() {
		s.ErrorPage(w, r, http.StatusForbidden, "Your developer account must pass qualification review before you create applications.")
		return
	}
	if err := r.ParseForm(); err != nil {
		s.ErrorPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	in := commands.CreateApp{
		Name: strings.TrimSpace(r.PostForm.Get("name")), Purpose: r.PostForm.Get("purpose"),
		Scopes: r.PostForm["scopes"], Environment: commands.EnvSandbox, DeveloperID: dev.ID,
	}
	// The command grants the default set when no scope is named (the admin
	// API's rule); in the portal the grant is exactly what was ticked.
	var err error
	if len(in.Scopes) == 0 {
		v := &domain.ValidationError{}
		v.Add("scopes", "choose at least one scope your application needs")
		err = v
	} else {
		var creds commands.Credentials
		creds, err = s.Apps.Create(r.Context(), in, Meta(w, r))
		if err == nil {
			s.waitApps(r.Context(), creds.Position)
			s.Render(w, r, http.StatusCreated, "apps_credentials.html", map[string]any{
				"Heading": "Application created in the sandbox", "Credentials": creds, "Secrets": secretsOf(creds),
			})
			return
		}
	}
	if fields := FieldErrors(err); fields != nil {
		s.Render(w, r, http.StatusBadRequest, "apps_new.html", map[string]any{
			"Scopes": scopeChoices(in.Scopes), "Name": in.Name, "Purpose": in.Purpose, "Errors": fields,
		})
		return
	}
	s.Fail(w, r, err)
}

func (s *Server) appPage(w http.ResponseWriter, r *http.Request) {
	app, ok := s.ownApp(r)
	if !ok {
		s.NotFound(w, r)
		return
	}
	var endpoints []endpointView
	for _, e := range app.WebhookEndpoints() {
		endpoints = append(endpoints, viewEndpoint(e))
	}
	s.Render(w, r, http.StatusOK, "apps_page.html", map[string]any{"App": s.viewOf(app), "ReviewDays": ReviewDays, "AwaitsReveal": s.awaitsReveal(app),
		"Endpoints": endpoints, "Catalog": s.catalogPage()})
}

func (s *Server) appRotateSecret(w http.ResponseWriter, r *http.Request) {
	app, ok := s.ownApp(r)
	if !ok || app.Retired {
		s.NotFound(w, r)
		return
	}
	if s.awaitsReveal(app) {
		// The production secrets are handed over by the one-time reveal,
		// which also retires the sandbox app; a rotation must not bypass it.
		s.ErrorPage(w, r, http.StatusConflict, "Reveal the production credentials on the sandbox application's page first.")
		return
	}
	creds, err := s.Apps.RotateSecret(r.Context(), app.AppID, Meta(w, r))
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.waitApps(r.Context(), creds.Position)
	creds.AppKey, creds.Environment = app.AppKey, app.Environment
	s.Render(w, r, http.StatusOK, "apps_credentials.html", map[string]any{
		"Heading": "New app secret", "Credentials": creds, "Secrets": secretsOf(creds), "Rotated": true,
	})
}

// appAuthentication sets which signatures the app's partner routes accept:
// "scheme-h" requires scheme H on every route, "default" accepts scheme M
// (the spec's default) or scheme H.
func (s *Server) appAuthentication(w http.ResponseWriter, r *http.Request) {
	app, ok := s.ownApp(r)
	if !ok || app.Retired {
		s.NotFound(w, r)
		return
	}
	if err := r.ParseForm(); err != nil {
		s.ErrorPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	var require bool
	switch r.PostForm.Get("signing") {
	case "scheme-h":
		require = true
	case "default":
	default:
		s.ErrorPage(w, r, http.StatusUnprocessableEntity, "Choose scheme H only or scheme M or H.")
		return
	}
	pos, err := s.Apps.SetAuthentication(r.Context(), app.AppID, require, Meta(w, r))
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.waitApps(r.Context(), pos)
	msg := "Requests may be signed with scheme M or scheme H."
	if require {
		msg = "Every request must now be signed with scheme H; scheme M is refused (401)."
	}
	s.Redirect(w, r, appPath(app.AppID), Flash{Kind: "info", Message: msg})
}

func (s *Server) appRequestReview(w http.ResponseWriter, r *http.Request) {
	app, ok := s.ownApp(r)
	if !ok {
		s.NotFound(w, r)
		return
	}
	if err := r.ParseForm(); err != nil {
		s.ErrorPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	pos, err := s.Apps.RequestReview(r.Context(), app.AppID, r.PostForm.Get("host_app_id"), Meta(w, r))
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.waitApps(r.Context(), pos)
	s.Redirect(w, r, appPath(app.AppID), Flash{Kind: "info",
		Message: "Production review requested. Review is completed within " + strconv.Itoa(ReviewDays) + " business days."})
}

func (s *Server) appRevealProduction(w http.ResponseWriter, r *http.Request) {
	app, ok := s.ownApp(r)
	if !ok {
		s.NotFound(w, r)
		return
	}
	creds, err := s.Apps.RevealProduction(r.Context(), app.AppID, Meta(w, r))
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.waitApps(r.Context(), creds.Position)
	creds.PluginAppID = app.PluginAppID
	s.Render(w, r, http.StatusOK, "apps_credentials.html", map[string]any{
		"Heading": "Production credentials", "Credentials": creds, "Secrets": secretsOf(creds), "Production": true, "SandboxAppID": app.AppID,
	})
}

// awaitsReveal says app is a production app whose credentials its
// developer has not yet revealed.
func (s *Server) awaitsReveal(app domain.App) bool {
	if app.SandboxAppID == 0 {
		return false
	}
	sb, ok := s.AppDirectory.ByID(app.SandboxAppID)
	return ok && !sb.ProductionRevealed
}

func appPath(id int64) string { return "/portal/apps/" + strconv.FormatInt(id, 10) }

// mayReview checks the operator's role as the admin API would for the
// same decision, so the portal grants no operator more than the API does.
func mayReview(r *http.Request, adminPath string) error {
	return mayChange(r, http.MethodPost, adminPath)
}

// mayChange checks the operator's role for the admin route (method, path)
// that makes the same change (auth.Permit, the one role table).
func mayChange(r *http.Request, method, adminPath string) error {
	op, ok := SignedInOperator(r)
	if !ok {
		return domain.ErrRoleForbidden
	}
	return auth.Permit(op.Role, method, adminPath)
}

func (s *Server) opsApps(w http.ResponseWriter, r *http.Request) {
	s.Render(w, r, http.StatusOK, "ops_apps.html", map[string]any{"Requests": s.AppDirectory.ReviewRequests(), "Decided": decidedApps(s.AppDirectory.List())})
}

func (s *Server) opsReviewApp(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("appId"), 10, 64)
	if err != nil || id <= 0 {
		s.NotFound(w, r)
		return
	}
	if err := mayReview(r, "/admin/v1/apps/"+strconv.FormatInt(id, 10)+"/review"); err != nil {
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
	notes := strings.TrimSpace(r.PostForm.Get("reason"))
	meta := Meta(w, r)
	creds, err := s.Apps.Review(r.Context(), id, approve, notes, meta)
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.waitApps(r.Context(), creds.Position)
	msg := "Application " + strconv.FormatInt(id, 10) + " rejected; the developer sees the reason."
	if approve {
		// The operator never sees the production secrets here: the
		// developer reveals them once, which re-issues them.
		msg = "Application " + strconv.FormatInt(id, 10) + " approved: production app " + strconv.FormatInt(creds.AppID, 10) + " created."
		if creds.PluginAppID != "" {
			msg += " Plugin app id " + creds.PluginAppID + " issued."
		}
	}
	s.Redirect(w, r, "/portal/ops/apps", Flash{Kind: "info", Message: msg})
}

// decision reads a review form's decision button.
func decision(v string) (bool, error) {
	switch v {
	case "approve":
		return true, nil
	case "reject":
		return false, nil
	}
	verr := &domain.ValidationError{}
	verr.Add("decision", "must be approve or reject")
	return false, verr
}

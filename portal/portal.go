package portal

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/directory"
	"github.com/healthtech/partner-open-platform/webhooks"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets/*
var assetFS embed.FS

// Prefix is where the portal is mounted on the platform's server.
const Prefix = "/portal/"

// ContentSecurityPolicy is sent with every portal response: scripts only
// from the portal's own embedded files (no inline script, no eval), no
// framing, forms post only to the portal.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

// maxForm bounds a form body.
const maxForm = 64 << 10

// The defaults of Config's session and sign-in bounds, used when a field is
// zero; the platform's settings table shows these same values.
const (
	DefaultSessionIdle     = 30 * time.Minute // a session unused this long ends
	DefaultSessionMax      = 12 * time.Hour   // a session ends this long after sign-in
	DefaultLockoutFailures = 5                // failed sign-ins of one account that lock it
	DefaultLockoutPeriod   = 15 * time.Minute // how long a locked account stays locked
	DefaultAddressLimit    = 20               // sign-in, sign-up and reset attempts per minute per address
)

// Config is the portal's settings (cmd/platform: PLATFORM_PORTAL_*).
type Config struct {
	// SessionKey seals session cookies (32 bytes, derived from the master
	// key, so every node sharing the stores accepts every node's cookies).
	SessionKey []byte
	// InsecureCookies drops the Secure flag, for plain-http development on
	// localhost only (PLATFORM_PORTAL_INSECURE_COOKIES).
	InsecureCookies bool
	// SessionIdle ends a session unused this long (default 30 min);
	// SessionMax ends any session this long after sign-in (default 12 h).
	SessionIdle time.Duration
	SessionMax  time.Duration
	// LockoutFailures failed sign-ins of one account within LockoutPeriod
	// lock it for LockoutPeriod (defaults 5 and 15 min); AddressLimit is
	// sign-in attempts per minute from one client address (default 20).
	LockoutFailures int
	LockoutPeriod   time.Duration
	AddressLimit    int
	// SMTP says mail leaves through an SMTP server (PLATFORM_SMTP_URL);
	// false: messages wait in the outbox for an operator.
	SMTP bool
	// BaseURL is the portal's public origin for links in mail (e.g.
	// https://open.example.com); required. Links never come from a
	// request's Host header.
	BaseURL string
	// Location is the zone every page shows times in, with its offset: the
	// platform's (PLATFORM_TIMEZONE), the zone of the API's Y-m-d H:i:s
	// times, so a time read in the portal and in the API is the same text.
	// nil: UTC.
	Location *time.Location
}

// Taker is a token-bucket store (internal/ratelimit, in process or in
// Postgres shared by every node); the portal's sign-in limits use it.
type Taker interface {
	Take(ctx context.Context, key string, want, back int) (ratelimit.Grant, error)
}

// Limits are the sign-in buckets: per client address, per account
// failures, and the lock each account takes when its failures run out.
type Limits struct {
	Address Taker
	Account Taker
	Lock    Taker
}

// Deps are the commands and read models the portal's pages use: the same
// ones the API uses (the portal is one more edge, never a side door).
type Deps struct {
	Developers   *commands.Developers
	Mail         *commands.Mail
	Apps         *commands.Apps
	Benefits     *commands.Benefits
	AppDirectory *directory.Apps
	Directory    *directory.Developers
	// DirectoryReady is the runner of Directory: pages wait for it to reach
	// a write before reading it back (read your writes).
	DirectoryReady Waiter
	Operators      OperatorDirectory
	// OperatorSessions records operator portal sessions, so a sign-out
	// ends a session on every node (required).
	OperatorSessions *commands.OperatorSessions
	Admin            auth.Admin
	ReadModel        ReadModel
	Events           events.Store
	Watermarks       *projections.Watermarks
	Dispatcher       *webhooks.Dispatcher
	Limits           Limits
	Now              func() time.Time
	Log              *slog.Logger

	// Replays serves the webhook replay form and page (nil: none).
	Replays *commands.Replays

	// AppsReady and BenefitsReady are the runners of AppDirectory and of the
	// benefits read model (providers): app and provider pages wait for them.
	AppsReady     Waiter
	BenefitsReady Waiter
}

// Waiter waits until a projection has applied the log up to a position.
type Waiter interface {
	WaitFor(ctx context.Context, pos events.Position) error
}

// OperatorDirectory finds a named operator by id, so an operator session
// ends when the operator is revoked.
type OperatorDirectory interface {
	ByID(id int64) (directory.Operator, bool)
}

// ReadModel is what the portal's pages read of the read models.
type ReadModel interface {
	projections.DeliveryStore
	projections.BenefitStore
	projections.AuditStore
}

// Server serves the portal's pages under Prefix.
type Server struct {
	Deps
	cfg   Config
	mux   *http.ServeMux
	pages map[string]*template.Template
	// mailJobs is the work pages hand to RunMailWork.
	mailJobs chan mailJob
	// registered routes, for tests and the bad-input table.
	mu     sync.Mutex
	routes []Route
}

// Route is one registered page route and who may reach it.
type Route struct {
	Pattern string // "METHOD /portal/path/{param}"
	Access  Access
}

// Access says who may reach a route.
type Access int

// Route access levels.
const (
	Public Access = iota
	DeveloperOnly
	OperatorOnly
)

// registrars add routes; each page file appends one in its init (see
// doc.go), so adding a page never edits this file.
var registrars []func(*Server)

// addRoutes registers a page file's routes.
func addRoutes(fn func(*Server)) { registrars = append(registrars, fn) }

// New builds the portal.
func New(cfg Config, deps Deps) (*Server, error) {
	if len(cfg.SessionKey) < 32 {
		return nil, errors.New("portal: a 32-byte session key is required")
	}
	if deps.OperatorSessions == nil {
		return nil, errors.New("portal: operator sessions are required")
	}
	base, err := checkBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	cfg.BaseURL = base
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = DefaultSessionIdle
	}
	if cfg.SessionMax <= 0 {
		cfg.SessionMax = DefaultSessionMax
	}
	if cfg.LockoutFailures <= 0 {
		cfg.LockoutFailures = DefaultLockoutFailures
	}
	if cfg.LockoutPeriod <= 0 {
		cfg.LockoutPeriod = DefaultLockoutPeriod
	}
	if cfg.AddressLimit <= 0 {
		cfg.AddressLimit = DefaultAddressLimit
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Log == nil {
		deps.Log = slog.Default()
	}
	s := &Server{Deps: deps, cfg: cfg, mux: http.NewServeMux(), mailJobs: make(chan mailJob, mailQueueSize)}
	if err := s.parseTemplates(); err != nil {
		return nil, err
	}
	assets, _ := fs.Sub(assetFS, "assets")
	s.mux.Handle("GET /portal/assets/", http.StripPrefix("/portal/assets/", http.FileServerFS(assets)))
	for _, reg := range registrars {
		reg(s)
	}
	s.mux.HandleFunc("/portal/", func(w http.ResponseWriter, r *http.Request) { s.NotFound(w, r) })
	return s, nil
}

// Routes lists the registered page routes.
func (s *Server) Routes() []Route {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Route(nil), s.routes...)
}

func (s *Server) handle(pattern string, access Access, h http.HandlerFunc) {
	s.mu.Lock()
	s.routes = append(s.routes, Route{Pattern: pattern, Access: access})
	s.mu.Unlock()
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		id := identityFrom(r.Context())
		switch {
		case access == DeveloperOnly && id.Developer == nil, access == OperatorOnly && id.Operator == nil:
			if r.Method == http.MethodGet {
				to := "/portal/signin"
				if access == OperatorOnly {
					to = "/portal/ops/signin"
				}
				http.Redirect(w, r, to+"?next="+urlQueryEscape(r.URL.EscapedPath()), http.StatusSeeOther)
				return
			}
			s.ErrorPage(w, r, http.StatusForbidden, "Sign in first.")
			return
		}
		h(w, r)
	})
}

// Public registers a page anyone may reach.
func (s *Server) Public(pattern string, h http.HandlerFunc) { s.handle(pattern, Public, h) }

// Developer registers a page only a signed-in developer reaches; others
// are sent to sign in (GET) or refused (403).
func (s *Server) Developer(pattern string, h http.HandlerFunc) { s.handle(pattern, DeveloperOnly, h) }

// Operator registers a page only a signed-in operator reaches.
func (s *Server) Operator(pattern string, h http.HandlerFunc) { s.handle(pattern, OperatorOnly, h) }

// ServeHTTP applies the security headers, the session, CSRF on every
// state-changing request, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	if !strings.HasPrefix(r.URL.Path, "/portal/assets/") {
		// Pages may show secrets once and always show account data.
		h.Set("Cache-Control", "no-store")
	}
	if r.URL.Path == "/portal" {
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		return
	}
	sess, id := s.loadSession(w, r)
	ctx := context.WithValue(r.Context(), identityKey{}, id)
	ctx = context.WithValue(ctx, sessionKey{}, sess)
	r = r.WithContext(ctx)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if !s.csrfOK(r, sess) {
			s.ErrorPage(w, r, http.StatusForbidden, "The form expired or did not come from this portal. Reload the page and try again.")
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

// Flash is a one-time notice shown on the next page.
type Flash struct {
	Kind    string // "info" or "error"
	Message string
}

// Page is what every template receives: the signed-in identity, the CSRF
// token for forms, the flash notices and the page's own data.
type Page struct {
	Title     string
	Developer *commands.Developer
	Operator  *auth.Operator
	CSRF      string
	Flash     []Flash
	Data      any
}

func (s *Server) parseTemplates() error {
	base, err := template.New("layout.html").Funcs(funcs).Funcs(template.FuncMap{"when": s.when}).ParseFS(templateFS, "templates/layout.html", "templates/partials.html")
	if err != nil {
		return fmt.Errorf("portal: layout: %w", err)
	}
	files, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return err
	}
	s.pages = map[string]*template.Template{}
	for _, f := range files {
		name := path.Base(f)
		if name == "layout.html" || name == "partials.html" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, f)
		if err != nil {
			return fmt.Errorf("portal: template %s: %w", name, err)
		}
		s.pages[name] = t
	}
	return nil
}

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
}

// Render writes the named page (templates/<name>) inside the layout with
// status; data is the page's own (Page.Data).
func (s *Server) Render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	t, ok := s.pages[name]
	if !ok {
		s.Log.Error("portal: no such template", "template", name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	id := identityFrom(r.Context())
	sess := sessionFrom(r.Context())
	p := Page{Developer: id.Developer, Operator: id.Operator, Data: data, Flash: s.takeFlash(w, r)}
	if sess != nil {
		p.CSRF = s.csrfToken(sess)
	}
	var buf strings.Builder
	if err := t.ExecuteTemplate(&buf, "layout", p); err != nil {
		s.Log.Error("portal: render", "template", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(buf.String()))
}

// ErrorPage renders the error page with status and a message for people.
func (s *Server) ErrorPage(w http.ResponseWriter, r *http.Request, status int, message string) {
	s.Render(w, r, status, "error.html", map[string]any{"Status": status, "StatusText": http.StatusText(status), "Message": message})
}

// NotFound is the one page for anything missing or not the caller's: an
// id of another developer's resource answers exactly like a missing one.
func (s *Server) NotFound(w http.ResponseWriter, r *http.Request) {
	s.ErrorPage(w, r, http.StatusNotFound, "There is nothing here, or it is not yours.")
}

// Fail renders the page for a command's error, through the one table of
// errors to statuses (errorStatus); unknown errors are logged and shown as
// 500 without detail.
func (s *Server) Fail(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := errorStatus(err)
	if status == http.StatusInternalServerError {
		s.Log.Error("portal: command failed", "path", r.URL.Path, "err", err)
	}
	if status == http.StatusNotFound {
		s.NotFound(w, r)
		return
	}
	s.ErrorPage(w, r, status, msg)
}

// errorStatus is the portal's one table of domain errors to statuses and
// messages people read.
func errorStatus(err error) (int, string) {
	var v *domain.ValidationError
	switch {
	case errors.As(err, &v):
		return http.StatusBadRequest, "Check the form: " + v.Error()
	case errors.Is(err, domain.ErrAppNotFound), errors.Is(err, domain.ErrDeveloperNotFound),
		errors.Is(err, domain.ErrProviderNotFound), errors.Is(err, domain.ErrMailNotFound):
		return http.StatusNotFound, ""
	case errors.Is(err, domain.ErrEmailTaken):
		return http.StatusConflict, "An account with this email already exists. Sign in, or reset your password."
	case errors.Is(err, domain.ErrBadCredentials):
		return http.StatusUnauthorized, "Email or password is wrong."
	case errors.Is(err, domain.ErrResetTokenInvalid):
		return http.StatusBadRequest, "The reset link is invalid, used or expired. Ask for a new one."
	case errors.Is(err, domain.ErrDeveloperReviewed):
		return http.StatusConflict, "The developer already has this decision."
	case errors.Is(err, domain.ErrAppReviewed):
		return http.StatusConflict, "This application is not awaiting a review."
	case errors.Is(err, domain.ErrReviewNotRequestable):
		return http.StatusConflict, "Only a sandbox application not yet approved can request a review."
	case errors.Is(err, domain.ErrAppNotApproved):
		return http.StatusConflict, "The production review of this application has not been approved."
	case errors.Is(err, domain.ErrProductionRevealed):
		return http.StatusConflict, "The production credentials were already shown once and cannot be shown again; rotate the production app secret if it was lost."
	case errors.Is(err, domain.ErrProviderAlreadyReview):
		return http.StatusConflict, "This service provider was already reviewed."
	case errors.Is(err, domain.ErrBenefitItemNotFound):
		return http.StatusBadRequest, "A chosen benefit item does not exist."
	case errors.Is(err, domain.ErrEndpointNotFound), errors.Is(err, domain.ErrDeliveryNotFound), errors.Is(err, domain.ErrReplayNotFound):
		return http.StatusNotFound, ""
	case errors.Is(err, domain.ErrTooManyEndpoints):
		return http.StatusConflict, "This app already has the maximum number of webhook endpoints. Delete one first."
	case errors.Is(err, domain.ErrEndpointDisabled):
		return http.StatusConflict, "The endpoint is disabled. Enable it first."
	case errors.Is(err, domain.ErrNoPendingWebhookSecret):
		return http.StatusConflict, "There is no new secret to activate. Rotate the secret first."
	case errors.Is(err, domain.ErrReplayFinished):
		return http.StatusConflict, "This replay already completed; there is nothing to cancel."
	case errors.Is(err, domain.ErrContention):
		return http.StatusConflict, "Someone else changed this at the same moment. Try again."
	case errors.Is(err, domain.ErrRoleForbidden):
		return http.StatusForbidden, "Your operator role does not allow this."
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable, "The platform is busy. Try again."
	}
	return http.StatusInternalServerError, "Something went wrong on our side."
}

// FieldErrors returns a validation error's messages by form field (nil for
// other errors), for re-rendering a form beside its inputs.
func FieldErrors(err error) map[string][]string {
	var v *domain.ValidationError
	if errors.As(err, &v) {
		return v.Fields
	}
	return nil
}

// RequestID is the request's id (X-Request-Id), for command metadata.
func RequestID(w http.ResponseWriter, r *http.Request) string {
	if id := w.Header().Get(httpapi.RequestIDHeader); id != "" {
		return id
	}
	return r.Header.Get(httpapi.RequestIDHeader)
}

// Meta is the command metadata of the signed-in identity's action:
// "developer:<id>" or the operator's actor, with the request id.
func Meta(w http.ResponseWriter, r *http.Request) commands.Meta {
	m := commands.Meta{RequestID: RequestID(w, r)}
	id := identityFrom(r.Context())
	switch {
	case id.Developer != nil:
		m.Actor = commands.DeveloperActor(id.Developer.ID)
	case id.Operator != nil:
		m.Actor = id.Operator.Actor()
	}
	return m
}

// Redirect answers a form POST with 303 to a page, optionally flashing a notice there.
func (s *Server) Redirect(w http.ResponseWriter, r *http.Request, to string, flash ...Flash) {
	if len(flash) > 0 {
		s.setFlash(w, r, flash...)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// waitDirectory waits (bounded) until the developer directory has applied
// pos, so the page after a write shows it.
func (s *Server) waitDirectory(ctx context.Context, pos events.Position) {
	if s.DirectoryReady == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = s.DirectoryReady.WaitFor(ctx, pos)
}

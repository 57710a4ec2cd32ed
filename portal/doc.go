// Package portal is the developer portal: server-rendered pages
// under /portal/ on the platform's own server, one more edge over the same
// commands and read models as the API. Every state change is a command
// that appends events with the signed-in actor ("developer:<id>", or the
// operator's actor such as "operator:3"), so it lands in the audit trail;
// nothing writes a read model directly.
//
// # Adding a page
//
// Put your handlers in your own file (portal/<part>.go) and register their
// routes from that file's init, so no shared file changes:
//
//	func init() {
//		addRoutes(func(s *Server) {
//			s.Developer("GET /portal/apps", s.appsPage)            // signed-in developers only
//			s.Developer("POST /portal/apps", s.createApp)
//			s.Developer("GET /portal/apps/{id}", s.appPage)        // r.PathValue("id")
//			s.Operator("GET /portal/ops/providers", s.providers)   // signed-in operators only
//			s.Public("GET /portal/docs", s.docs)                  // anyone
//		})
//	}
//
// Patterns are net/http ServeMux patterns ("METHOD /portal/path/{param}",
// "{$}" for an exact path). Developer and Operator routes send a visitor
// who is not signed in to the matching sign-in page (GET) or answer 403
// (other methods). Developer pages live under /portal/..., operator pages
// under /portal/ops/... . Operator handlers that change state or show
// secrets should call s.requireAdmin(w, r) first (admin role only).
//
// # Who is asking
//
// SignedInDeveloper(r) returns the developer as their stream says now
// (commands.Developer: ID, Email, Status, Reason, Approved()); only an
// approved developer may create apps. SignedInOperator(r) returns the
// auth.Operator (ID, Name, Role, Actor()). Meta(w, r) is the
// commands.Meta to pass to a command: actor and request id.
//
// Another developer's resource in a URL must answer exactly like a missing
// one: call s.NotFound(w, r) (also what s.Fail does for the domain's
// not-found errors). Check ownership before anything else.
//
// # Rendering
//
// Templates are embedded from portal/templates/*.html. A page file
// (templates/<part>_<page>.html) defines "title" (used for <title> and the
// page's one <h1>, which the layout writes) and "content":
//
//	{{define "title"}}Applications{{end}}
//	{{define "content"}}<form method="post" action="/portal/apps">
//	{{template "csrf" .}}
//	<label for="name">Name</label><input id="name" name="name">
//	<button type="submit">Create application</button></form>{{end}}
//
// and a handler renders it in the layout with s.Render(w, r, status,
// "<part>_<page>.html", data); the template's dot is a Page (Developer,
// Operator, CSRF, Flash) with your data in .Data. Inside {{range}} use
// {{template "csrf" $}}. Give every input a <label for>, use snake_case
// field names, and no inline <script>, style attribute or on* handler: the
// Content-Security-Policy (script-src 'self', style-src 'self') blocks
// them. Scripts and CSS go in portal/assets/ (served at /portal/assets/);
// add blocks "head", "nav_developer" or "nav_operator" in your page file
// to add a <script src> or a nav link. The "field_errors" partial prints a
// field's messages: {{template "field_errors" index .Data.Errors "name"}},
// with FieldErrors(err) giving the map from a command's validation error.
//
// After a successful POST, answer with s.Redirect(w, r, "/portal/...",
// Flash{Kind: "info", Message: "..."}) (303, the notice shows once on the
// next page). On an error call s.Fail(w, r, err): the one table
// (errorStatus) maps domain errors to statuses and messages; re-render the
// form with status 400 for validation errors instead, if you like.
//
// # Secrets shown once
//
// Render a new secret in the response to the POST that made it (do not
// redirect; do not put it in a flash, a cookie or a URL), with the
// "secret" partial: {{template "secret" .Data.Secret}} where Secret has
// Label and Value. Every portal page is sent with Cache-Control: no-store,
// so the browser keeps no copy; no page shows the secret again.
//
// # CSRF and sessions
//
// ServeHTTP checks the CSRF token on every request other than GET/HEAD
// before routing (403, nothing appended), so handlers never check it
// themselves: forms just include {{template "csrf" .}}; scripts send the
// token in the X-CSRF-Token header. Sessions are sealed cookies
// (portal_session: HttpOnly, Secure unless PLATFORM_PORTAL_INSECURE_COOKIES,
// SameSite=Lax, Path=/portal/) keyed from the master key, checked on every
// request against the developer's stream (session.go).
//
// # Tests
//
// portal/portaltest starts a real node over TLS (portaltest.Start) and
// drives it like a browser: p.Developer(email, approved) signs a developer
// up through the sign-up page, waits for the account (sign-up and reset
// mail are background work after the page answered: RunMailWork) and
// signs it in (and approves it through the review command), p.Operator() signs the bootstrap operator in through the
// operator sign-in page; Browser.Get / Post (CSRF token added from the
// last page) / PostRaw (no token) return the status, headers and body.
package portal

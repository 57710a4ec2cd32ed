package commandapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/measureplugin"
	"github.com/healthtech/partner-open-platform/projections/directory"
)

// Uploaders finds reporting sides by the hash of their token.
type Uploaders interface {
	Uploader(hash string) (directory.Uploader, bool)
}

func (a *API) reportRoutes() []Route {
	return []Route{
		{Method: "POST", Path: "/admin/v1/uploaders", Handle: a.admin(a.registerUploader)},
		{Method: "POST", Path: "/admin/v1/health-reports", Handle: a.uploader(a.createReport)},
		{Method: "PATCH", Path: "/admin/v1/health-reports/:reportId", Handle: a.uploader(a.updateReport)},
		{Method: "POST", Path: "/plugin/v1/sessions", Handle: a.open(a.openSession)},
		{Method: "POST", Path: "/plugin/v1/sessions/:sessionId/measurements", Handle: a.open(a.submitMeasurement)},
		{Method: "POST", Path: "/sandbox/mock/measure", Handle: a.schemeH(a.mockMeasure)},
		{Method: "POST", Path: "/oauth/token", Handle: a.token},
		{Method: "POST", Path: "/oauth/revoke", Handle: a.revoke},
	}
}

// uploader accepts the operator token or an uploader's own token.
func (a *API) uploader(h func(*call) error) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		op, err := a.Admin.Operator(r)
		actor := op.Actor() // replaced below when an uploader calls
		if errors.Is(err, domain.ErrRoleForbidden) {
			httpapi.Error(w, r, err) // a named operator whose role may not upload
			return
		}
		if err != nil {
			tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			u, found := a.UploaderDirectory.Uploader(domain.HashToken(strings.TrimSpace(tok)))
			if !ok || !found {
				httpapi.Error(w, r, &httpapi.Problem{Status: http.StatusUnauthorized, Code: "HTTP_401", Message: "operator or uploader token missing or wrong"})
				return
			}
			actor = "uploader:" + strconv.FormatInt(u.UploaderID, 10)
		}
		a.run(w, r, ps, h, commands.Meta{Actor: actor})
	}
}

// open is for routes whose body carries its own proof (the plugin's signed launch, a session id).
func (a *API) open(h func(*call) error) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		a.run(w, r, ps, h, commands.Meta{Actor: "plugin"})
	}
}

func (a *API) schemeH(h func(*call) error) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		body, err := httpapi.ReadBody(r)
		if err != nil {
			httpapi.Error(w, r, err)
			return
		}
		app, err := a.SchemeH.Verify(r, body)
		if err != nil {
			httpapi.Error(w, r, err)
			return
		}
		a.keyed(w, r, ps, app, body, h)
	}
}

func (a *API) run(w http.ResponseWriter, r *http.Request, ps httprouter.Params, h func(*call) error, meta commands.Meta) {
	body, err := httpapi.ReadBody(r)
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	meta.RequestID = w.Header().Get(httpapi.RequestIDHeader)
	c := &call{w: w, r: r, ps: ps, body: body, config: a, meta: meta}
	if err := httpapi.CheckParams(r, ps); err != nil {
		httpapi.Error(w, r, err)
		return
	}
	if err := h(c); err != nil {
		httpapi.Error(w, r, err)
	}
}

func (a *API) registerUploader(c *call) error {
	var name string
	if err := c.decode(func(o *httpapi.Object) { name = o.RequiredString("name") }); err != nil {
		return err
	}
	creds, err := a.Credentials.RegisterUploader(c.r.Context(), name, c.meta)
	if err != nil {
		return err
	}
	if err := a.waitApps(c.r.Context(), creds.Position); err != nil {
		return err
	}
	httpapi.OK(c.w, http.StatusCreated, map[string]any{"uploader_id": creds.UploaderID, "name": creds.Name, "token": creds.Token})
	return nil
}

func (a *API) createReport(c *call) error {
	var in commands.ReportInput
	if err := c.decode(func(o *httpapi.Object) {
		in = commands.ReportInput{
			OpenUserID: o.RequiredInt("open_user_id"), OpenMemberID: o.Int("open_member_id"),
			RequestReportID: o.String("request_report_id"), MeasurementNo: o.String("measurement_no"), DeviceSN: o.String("device_sn"),
			ReportType: o.String("report_type"), FilePath: o.String("file_path"), InterpretationResult: o.String("interpretation_result"),
			InterpretationMethod: o.String("interpretation_method"),
			ExaminedAt:           o.Time("examined_at", a.Location), InterpretedAt: o.Time("interpreted_at", a.Location),
		}
		if d := o.Raw("interpretation_detail"); d.Set && !d.Null {
			in.InterpretationDetail = d.Value
		}
		if raw := o.Raw("raw_data"); raw.Set && !raw.Null {
			in.RawData = raw.Value
		}
		if m := o.Object("meta", false); m != nil {
			in.PointsCode, in.DataSource, in.OperatorName, in.OperatorUserID = m.String("points_code"), m.String("data_source"), m.String("operator_name"), m.Int("operator_platform_user_id")
		}
	}); err != nil {
		return err
	}
	res, err := a.Reports.Create(c.r.Context(), in, c.meta.Actor, c.meta)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	a.Watermarks.Wrote(res.AppID, res.Position)
	httpapi.OK(c.w, status, map[string]any{"id": res.ReportID, "created": res.Created})
	return nil
}

func (a *API) updateReport(c *call) error {
	ids, err := c.ids("reportId")
	if err != nil {
		return err
	}
	var p commands.ReportPatch
	if err := c.decode(func(o *httpapi.Object) {
		p = commands.ReportPatch{
			ReportType: o.String("report_type"), FilePath: o.String("file_path"), InterpretationResult: o.String("interpretation_result"),
			InterpretationMethod: o.String("interpretation_method"), InterpretationDetail: o.Raw("interpretation_detail"),
			InterpretedAt: o.Time("interpreted_at", a.Location),
		}
	}); err != nil {
		return err
	}
	if _, err := a.Reports.Update(c.r.Context(), ids[0], p, c.meta.Actor, c.meta); err != nil {
		return err
	}
	httpapi.OK(c.w, http.StatusOK, nil)
	return nil
}

func pluginApp(app domain.App) commands.PluginApp {
	return commands.PluginApp{AppID: app.AppID, AppKey: app.AppKey, AppSecret: app.AppSecret, Sandbox: app.Environment == commands.EnvSandbox}
}

func (a *API) openSession(c *call) error {
	var l measureplugin.Launch
	if err := c.decode(func(o *httpapi.Object) {
		l = measureplugin.Launch{
			AppKey: o.RequiredString("appKey"), ThirdUserID: o.RequiredString("thirdUserId"), UserProfile: o.RequiredString("userProfile"),
			Timestamp: o.RequiredString("timestamp"), Nonce: o.RequiredString("nonce"), Sign: o.RequiredString("sign"),
			DeviceKey: o.RequiredString("deviceKey"), MeasureMode: o.RequiredString("measureMode"),
		}
	}); err != nil {
		return err
	}
	app, ok, err := auth.AppByKey(a.SchemeM.Apps, l.AppKey)
	if err != nil {
		return err // the app may exist: this node could not confirm it does not
	}
	if !ok {
		return domain.ErrPluginAuth
	}
	if app.Suspended {
		return domain.ErrAppSuspended
	}
	s, err := a.Plugin.OpenSession(c.r.Context(), pluginApp(app), l, c.meta)
	if err != nil {
		return err
	}
	httpapi.OK(c.w, http.StatusCreated, map[string]any{"session_id": s.SessionID, "report_type": s.ReportType, "expires_at": s.ExpiresAt.Format(time.RFC3339)})
	return nil
}

func (a *API) submitMeasurement(c *call) error {
	var deviceSN *string
	var data json.RawMessage
	if err := c.decode(func(o *httpapi.Object) {
		deviceSN = o.String("device_sn").Ptr()
		if d := o.Raw("data"); d.Set && !d.Null {
			data = d.Value
		}
	}); err != nil {
		return err
	}
	m, err := a.Plugin.Submit(c.r.Context(), c.ps.ByName("sessionId"), deviceSN, data, c.meta)
	if err != nil {
		return err
	}
	httpapi.OK(c.w, http.StatusCreated, map[string]any{"measureId": m.MeasurementNo, "measurement_no": m.MeasurementNo, "report_type": m.ReportType})
	return nil
}

func (a *API) mockMeasure(c *call) error {
	var key, third, device, mode string
	if err := c.decode(func(o *httpapi.Object) {
		key, third, device, mode = o.RequiredString("appKey"), o.RequiredString("thirdUserId"), o.RequiredString("deviceKey"), o.RequiredString("measureMode")
	}); err != nil {
		return err
	}
	if key != c.app.AppKey {
		v := &domain.ValidationError{}
		v.Add("appKey", "must be the calling app's key (X-App-Key)")
		return v
	}
	m, err := a.Plugin.MockMeasure(c.r.Context(), pluginApp(c.app), third, device, mode, c.meta)
	if err != nil {
		return err
	}
	httpapi.OK(c.w, http.StatusOK, map[string]any{"measureId": m.MeasurementNo, "measurement_no": m.MeasurementNo, "report_type": m.ReportType})
	return nil
}

// oauthError answers in RFC 6749 §5.2 form, not the platform envelope.
func oauthError(w http.ResponseWriter, status int, code, desc string) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="platform"`)
	}
	w.Header().Set("Cache-Control", "no-store")
	httpapi.WriteJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

// client authenticates an OAuth client: app key and secret by HTTP Basic or in the form.
func (a *API) client(r *http.Request) (domain.App, bool) {
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	app, found := a.SchemeM.Apps.ByKey(id)
	if !found || !auth.SameSecret(app.AppSecret, secret) {
		return domain.App{}, false
	}
	return app, true
}

func (a *API) parseForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded")
		return false
	}
	return true
}

// token is the OAuth 2.0 token endpoint (RFC 6749 §4.4, client credentials).
func (a *API) token(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	if !a.parseForm(w, r) {
		return
	}
	app, ok := a.client(r)
	if !ok {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "unknown client or wrong secret")
		return
	}
	if app.Suspended {
		// RFC 6749 §5.2: the client authenticated but may not be granted a token.
		oauthError(w, http.StatusBadRequest, "unauthorized_client", "the app is suspended")
		return
	}
	if r.PostForm.Get("grant_type") == "" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "grant_type is required")
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != "client_credentials" {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "only client_credentials is supported")
		return
	}
	scope := r.PostForm.Get("scope")
	if scope == "" {
		scope = "daily_report"
	}
	if scope != "daily_report" {
		oauthError(w, http.StatusBadRequest, "invalid_scope", "the only scope is daily_report")
		return
	}
	// A token the daily report would refuse (403 SCOPE_NOT_GRANTED) is not
	// issued: RFC 6749 §5.2 names a scope beyond the client's grant
	// invalid_scope.
	if !slices.Contains(app.Scopes, scope) {
		oauthError(w, http.StatusBadRequest, "invalid_scope", "the app was not granted the daily_report scope")
		return
	}
	t, err := a.Credentials.IssueToken(r.Context(), app.AppID, scope, commands.Meta{Actor: "app:" + strconv.FormatInt(app.AppID, 10)})
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	if err := a.waitApps(r.Context(), t.Position); err != nil {
		httpapi.Error(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{
		"access_token": t.Token, "token_type": "Bearer", "expires_in": int(t.ExpiresIn.Seconds()), "scope": t.Scope,
	})
}

// revoke is the OAuth 2.0 revocation endpoint (RFC 7009).
func (a *API) revoke(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	if !a.parseForm(w, r) {
		return
	}
	app, ok := a.client(r)
	if !ok {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "unknown client or wrong secret")
		return
	}
	tok := r.PostForm.Get("token")
	if tok == "" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "token is required")
		return
	}
	pos, err := a.Credentials.RevokeToken(r.Context(), app.AppID, tok, commands.Meta{Actor: "app:" + strconv.FormatInt(app.AppID, 10)})
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	if err := a.waitApps(r.Context(), pos); err != nil {
		httpapi.Error(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

package openapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/healthtech/partner-open-platform/commandapi"
	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/measureplugin"
	"github.com/healthtech/partner-open-platform/internal/openapi"
	"github.com/healthtech/partner-open-platform/internal/openapi/openapitest"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
	"github.com/healthtech/partner-open-platform/internal/secrets"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/directory"
	projmemory "github.com/healthtech/partner-open-platform/projections/memory"
	"github.com/healthtech/partner-open-platform/queryapi"
	"github.com/healthtech/partner-open-platform/webhooks"
	"github.com/healthtech/partner-open-platform/webhooks/targets"
)

const (
	adminToken    = "adm_test"
	internalToken = "int_test"
)

// offsetClock is the plugin commands' clock; the test moves it forward to
// expire a measurement session.
type offsetClock struct{ offset atomic.Int64 }

func (c *offsetClock) now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// phones binds plugin measurements to users through the read model, as
// internal/node's phoneDirectory does.
type phones struct{ store *projmemory.Store }

func (d phones) UserIDByPhone(ctx context.Context, appID int64, phone string) (int64, bool, error) {
	u, err := d.store.UserByPhone(ctx, appID, phone)
	if errors.Is(err, projections.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return u.OpenUserID, true, nil
}

// providers finds an app's service providers and a fulfillment's issuer
// through the read model, as internal/node's providerDirectory does.
type providers struct{ store *projmemory.Store }

func (d providers) ProviderIDs(ctx context.Context, appID int64) ([]int64, error) {
	list, err := d.store.Providers(ctx, appID)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, 0, len(list))
	for _, p := range list {
		ids = append(ids, p.ProviderID)
	}
	return ids, nil
}

func (d providers) FulfillmentIssuer(ctx context.Context, recordID int64) (int64, bool, error) {
	list, err := d.store.Fulfillments(ctx, projections.FulfillmentFilter{After: recordID - 1, Limit: 1})
	if err != nil || len(list) == 0 || list[0].RecordID != recordID {
		return 0, false, err
	}
	return list[0].IssuerAppID, true, nil
}

// server wires the real command and query handlers the way internal/node
// does (which this package cannot import), with in-memory adapters. The
// plugin and benefit commands run on clock.
func server(t *testing.T, clock *offsetClock) *httptest.Server {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	store, reg, readModel := memory.New(), catalog.Registry(), projmemory.New()
	apps := directory.NewApps(sealer)
	appsRunner := subscribe.NewRunner(store, reg, apps, log, nil)
	runners := []*subscribe.Runner{appsRunner}
	readModels := map[projections.ReadModel]*subscribe.Runner{}
	var reflected subscribe.RunnerSet
	for _, p := range []subscribe.Projector{projections.UsersProjector(readModel), projections.DeliveriesProjector(readModel),
		projections.ReportsProjector(readModel, loc), projections.OrdersProjector(readModel), projections.BenefitsProjector(readModel)} {
		run := subscribe.NewRunner(store, reg, p, log, nil)
		readModels[projections.ReadModel(p.Name())] = run
		runners = append(runners, run)
		reflected = append(reflected, run)
	}
	modelsRunner := readModels[projections.ReadModelDeliveries]
	// The dispatcher creates deliveries (so the delivery log, the feed and
	// resends have something to show) but its sender is not started: no
	// webhook leaves the test.
	dispatcher := &webhooks.Dispatcher{
		Store: store, Registry: reg, Apps: apps, AppsReady: appsRunner, Deliveries: readModel, Projected: modelsRunner, Reflected: reflected,
		Client: targets.Guard{}.Client(10 * time.Second), Clock: webhooks.SystemClock{}, Schedule: webhooks.DefaultSchedule,
		Location: loc, Log: log,
	}
	ids := commands.NewAllocator(store, reg, 10)
	names, err := domain.NewPseudonyms(make([]byte, domain.PseudonymKeySize))
	if err != nil {
		t.Fatal(err)
	}
	schemeM, admin, marks := auth.SchemeM{Apps: apps, Now: time.Now}, auth.Admin{Token: adminToken}, projections.NewWatermarks()
	schemeH := auth.SchemeH{Apps: apps, Nonces: readModel, Now: time.Now}
	reports := commands.NewReports(store, reg, ids, time.Now)
	cmd := &commandapi.API{
		Users: commands.NewUsers(store, reg, ids, names, time.Now, loc), Apps: commands.NewApps(store, reg, ids, sealer, nil),
		SchemeM: schemeM, Admin: admin, Watermarks: marks, AppsReady: appsRunner, Resender: dispatcher, Location: loc,
		Deliveries: readModel, DeliveryErasures: commands.NewDeliveryErasures(store, reg),
		SchemeH: schemeH, Reports: reports, Plugin: commands.NewPlugin(store, reg, ids, clock.now, phones{readModel}),
		Credentials: commands.NewCredentialIssuer(store, reg, ids, time.Now), UploaderDirectory: apps,
		Orders:        commands.NewOrders(store, reg, ids, time.Now),
		Benefits:      commands.NewBenefits(store, reg, ids, clock.now, 10*time.Second, providers{readModel}),
		InternalToken: internalToken, Projections: subscribe.RunnerSet(runners),
	}
	qry := &queryapi.API{
		Store: readModel, Apps: apps, Events: store, Runners: runners, ReadModelRunners: readModels,
		SchemeM: schemeM, Admin: admin, Watermarks: marks, Location: loc, Deliveries: readModel,
		Orders: readModel, Benefits: readModel,
	}
	reportAPI := &queryapi.ReportAPI{
		Reports: readModel, Users: readModel, Events: store, Runner: readModels[projections.ReadModelReports], SchemeH: schemeH,
		Limiter: ratelimit.New(60, time.Minute), Views: reports, Tokens: apps, Apps: apps, Location: loc, Now: time.Now, Watermarks: marks,
	}
	rt := httprouter.New()
	rt.RedirectTrailingSlash, rt.RedirectFixedPath = false, false
	wrap := func(route string, h http.Handler) http.Handler { return httpapi.Instrument(log, route, nil, h) }
	routes := append(cmd.Routes(), qry.Routes()...)
	for _, r := range append(routes, reportAPI.Routes()...) {
		rt.Handle(r.Method, r.Path, httpapi.InstrumentRoute(log, log, r.Path, nil, r.Handle))
	}
	rt.Handler("GET", "/healthz", wrap("/healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		httpapi.OK(w, http.StatusOK, map[string]any{"status": "ok"})
	})))
	rt.Handler("GET", "/openapi.yaml", wrap("/openapi.yaml", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(openapi.Spec)
	})))
	rt.NotFound = wrap("unmatched", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { httpapi.Error(w, r, httpapi.ErrNotFound) }))
	rt.MethodNotAllowed = wrap("unmatched", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { httpapi.Error(w, r, httpapi.ErrMethod) }))

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.Run(ctx) }()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = subscribe.Pipeline[webhooks.PreparedBatch]{Name: "webhook deliveries", Source: subscribe.StoreSource{Store: store, From: readModel.LastSource},
			Prepare: dispatcher.PrepareBatch, Commit: dispatcher.CommitBatches}.Run(ctx)
	}()
	srv := httptest.NewServer(rt)
	t.Cleanup(func() { srv.Close(); cancel(); wg.Wait(); _ = readModel.Close(); _ = store.Close() })
	return srv
}

type client struct {
	t              *testing.T
	base           string
	http           *http.Client
	appID          int64
	appKey, secret string
}

type reply struct {
	status int
	env    struct {
		Code any             `json:"code"`
		Data json.RawMessage `json:"data"`
	}
}

func (c *client) send(method, path string, body any, header func(h http.Header, raw []byte)) reply {
	c.t.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			c.t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(raw))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if header != nil {
		header(req.Header, raw)
	}
	res, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	r := reply{status: res.StatusCode}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(out, &r.env); err != nil {
			c.t.Fatalf("%s %s: %v: %s", method, path, err, out)
		}
	}
	return r
}

func (c *client) admin(method, path string, body any) reply {
	c.t.Helper()
	return c.send(method, path, body, func(h http.Header, _ []byte) { h.Set("Authorization", "Bearer "+adminToken) })
}

func (c *client) partner(method, path string, body any) reply {
	c.t.Helper()
	return c.send(method, path, body, func(h http.Header, raw []byte) {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		h.Set("X-App-Id", strconv.FormatInt(c.appID, 10))
		h.Set("X-Timestamp", ts)
		h.Set("X-Signature", auth.SignM(c.appKey, ts, c.secret, raw))
	})
}

func (c *client) expect(r reply, status int, code any) reply {
	c.t.Helper()
	if r.status != status || fmt.Sprint(r.env.Code) != fmt.Sprint(code) {
		c.t.Fatalf("got %d %v, want %d %v", r.status, r.env.Code, status, code)
	}
	return r
}

func (r reply) data(t *testing.T, into any) {
	t.Helper()
	if err := json.Unmarshal(r.env.Data, into); err != nil {
		t.Fatalf("data %s: %v", r.env.Data, err)
	}
}

// TestHandlersAnswerAsDocumented drives every operation through its main
// outcomes with the validating transport, which fails the test on any
// response the document does not describe.
func TestHandlersAnswerAsDocumented(t *testing.T) {
	clock := &offsetClock{}
	srv := server(t, clock)
	c := &client{t: t, base: srv.URL, http: &http.Client{Transport: openapitest.NewTransport(t, nil), Timeout: 10 * time.Second}}

	// Node routes and catch-alls.
	c.expect(c.send("GET", "/healthz", nil, nil), 200, 0)
	if r := c.send("GET", "/openapi.yaml", nil, nil); r.status != 200 {
		t.Fatalf("openapi.yaml: %d", r.status)
	}
	c.expect(c.send("GET", "/open/v1/nothing", nil, nil), 404, "NOT_FOUND")
	c.expect(c.send("GET", "/open/v1/event-types", nil, nil), 200, 0)
	c.expect(c.send("GET", "/open/v1/event-types/health.report.created", nil, nil), 200, 0)
	c.expect(c.send("GET", "/open/v1/event-types/health.report.deleted", nil, nil), 404, "EVENT_TYPE_NOT_FOUND")
	c.expect(c.send("GET", "/open/v1/event-types/%FF", nil, nil), 422, "VALIDATION_ERROR")
	c.expect(c.send("PUT", "/open/v1/channel/users", nil, nil), 405, "METHOD_NOT_ALLOWED")

	// Admin.
	c.expect(c.send("GET", "/admin/v1/apps", nil, nil), 401, "HTTP_401")
	c.expect(c.admin("POST", "/admin/v1/apps", `{`), 400, "HTTP_400")
	c.expect(c.admin("POST", "/admin/v1/apps", map[string]any{"environment": "prod"}), 422, "VALIDATION_ERROR")
	c.expect(c.admin("POST", "/admin/v1/apps", `{"name":"`+strings.Repeat("a", 1<<20)+`"}`), 413, "PAYLOAD_TOO_LARGE")
	var creds struct {
		AppID     int64  `json:"app_id"`
		AppKey    string `json:"app_key"`
		AppSecret string `json:"app_secret"`
	}
	c.expect(c.admin("POST", "/admin/v1/apps", map[string]any{"name": "partner", "webhook_url": "https://example.com/hook", "webhook_events": []string{"health.report.*"}, "scopes": []string{"channel_users", "orders", "health_reports", "daily_report", "webhooks", "benefits", "plugin"}}), 201, 0).data(t, &creds)
	var bare struct {
		AppID     int64  `json:"app_id"`
		AppKey    string `json:"app_key"`
		AppSecret string `json:"app_secret"`
	}
	c.expect(c.admin("POST", "/admin/v1/apps", map[string]any{"name": "bare", "scopes": []string{"channel_users", "orders", "health_reports", "daily_report", "webhooks", "benefits", "plugin"}}), 201, 0).data(t, &bare)
	c.expect(c.admin("GET", "/admin/v1/apps", nil), 200, 0)
	c.expect(c.admin("GET", fmt.Sprintf("/admin/v1/apps/%d", creds.AppID), nil), 200, 0)
	c.expect(c.admin("GET", "/admin/v1/apps/999999", nil), 404, "APP_NOT_FOUND")
	c.expect(c.admin("GET", "/admin/v1/apps/abc", nil), 422, "VALIDATION_ERROR")
	c.expect(c.admin("POST", fmt.Sprintf("/admin/v1/apps/%d/rotate-secret", creds.AppID), nil), 200, 0).data(t, &creds)
	c.expect(c.admin("POST", "/admin/v1/apps/999999/rotate-secret", nil), 404, "APP_NOT_FOUND")
	c.appID, c.appKey, c.secret = creds.AppID, creds.AppKey, creds.AppSecret

	// Channel users.
	c.expect(c.send("POST", "/open/v1/channel/users", map[string]any{}, nil), 401, "HTTP_401")
	c.expect(c.partner("POST", "/open/v1/channel/users", ``), 400, "HTTP_400")
	c.expect(c.partner("POST", "/open/v1/channel/users", `{"x":"`+strings.Repeat("a", 1<<20)+`"}`), 413, "PAYLOAD_TOO_LARGE")
	c.expect(c.partner("POST", "/open/v1/channel/users", map[string]any{"channel_user_id": 5}), 422, "VALIDATION_ERROR")
	c.expect(c.partner("POST", "/open/v1/channel/users", map[string]any{
		"channel_user_id": "u-1", "user": map[string]any{"name": "A"},
		"family_members": []any{map[string]any{"app_user_id": "m", "app_group_id": 9, "name": "M", "relationship": "SON"}},
	}), 422, "INVALID_APP_GROUP_ID")
	register := map[string]any{
		"channel_user_id": "u-1",
		"user": map[string]any{
			"name": "Zhang San", "nickname": nil, "gender": "male", "phone": "13812345678",
			"email": "z@example.com", "birth_date": "1990-01-02", "avatar": "https://example.com/a.png",
		},
		"family_groups": []any{map[string]any{"app_group_id": 10, "name": "Home"}, map[string]any{"app_group_id": 11, "name": "Parents"}},
		"family_members": []any{
			map[string]any{"app_user_id": "self", "app_group_id": 10, "name": "Zhang San", "relationship": "SELF", "is_default": true,
				"gender": "male", "birth_date": "1990-01-02", "phone": "+8613812345678", "id_type": "ID_CARD", "id_number": "110101199001020000",
				"height": 175, "weight": 7050, "blood_type": "AB"},
			map[string]any{"app_user_id": "dad", "app_group_id": 11, "name": "Dad", "relationship": "FATHER"},
		},
	}
	var reg struct {
		OpenUserID   int64 `json:"open_user_id"`
		FamilyGroups []struct {
			FamilyGroupID int64 `json:"family_group_id"`
			AppGroupID    int64 `json:"app_group_id"`
		} `json:"family_groups"`
		FamilyMembers []struct {
			MemberID  int64  `json:"member_id"`
			AppUserID string `json:"app_user_id"`
		} `json:"family_members"`
	}
	c.expect(c.partner("POST", "/open/v1/channel/users", register), 201, 0).data(t, &reg)
	c.expect(c.partner("POST", "/open/v1/channel/users", register), 200, 0)
	c.expect(c.partner("POST", "/open/v1/channel/users", map[string]any{"channel_user_id": "u-2", "user": map[string]any{"name": "Bare"}}), 201, 0)
	user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)

	c.expect(c.partner("GET", user, nil), 200, 0)
	c.expect(c.partner("GET", "/open/v1/channel/users/0?channel_user_id=u-2", nil), 200, 0)
	c.expect(c.partner("GET", user+"?updated_after=2000-01-01T00:00:00%2B08:00", nil), 200, 0)
	c.expect(c.partner("GET", user+"?updated_after=yesterday", nil), 422, "VALIDATION_ERROR")
	c.expect(c.partner("GET", "/open/v1/channel/users/999999", nil), 404, "USER_NOT_FOUND")
	c.expect(c.partner("GET", "/open/v1/channel/users/0", nil), 422, "VALIDATION_ERROR")

	c.expect(c.partner("PATCH", user, map[string]any{"nickname": "Z", "email": nil}), 200, 0)
	c.expect(c.partner("PATCH", user, map[string]any{"nickname": "Z", "email": nil}), 200, 0)
	c.expect(c.partner("PATCH", user, map[string]any{"gender": nil}), 422, "VALIDATION_ERROR")
	c.expect(c.partner("PATCH", "/open/v1/channel/users/999999", map[string]any{"name": "x"}), 404, "USER_NOT_FOUND")

	var group struct {
		FamilyGroupID int64 `json:"family_group_id"`
	}
	c.expect(c.partner("POST", user+"/family-groups", map[string]any{"app_group_id": 12, "name": "Trip"}), 201, 0).data(t, &group)
	c.expect(c.partner("POST", user+"/family-groups", map[string]any{"app_group_id": 12, "name": "Trip 2"}), 200, 0)
	c.expect(c.partner("POST", user+"/family-groups", map[string]any{"app_group_id": 1.5, "name": "x"}), 422, "VALIDATION_ERROR")
	c.expect(c.partner("POST", "/open/v1/channel/users/999999/family-groups", map[string]any{"app_group_id": 1, "name": "x"}), 404, "USER_NOT_FOUND")

	var member struct {
		MemberID int64 `json:"member_id"`
	}
	c.expect(c.partner("POST", user+"/family-members", map[string]any{"app_user_id": "kid", "app_group_id": 12, "name": "Kid", "relationship": "SON", "is_default": true}), 201, 0).data(t, &member)
	c.expect(c.partner("POST", user+"/family-members", map[string]any{"app_user_id": "kid", "app_group_id": 12, "name": "Kid", "relationship": "SON", "height": nil}), 200, 0)
	c.expect(c.partner("POST", user+"/family-members", map[string]any{"app_user_id": "kid", "app_group_id": 12, "name": "Kid", "relationship": "SON", "id_type": "X"}), 422, "VALIDATION_ERROR")
	c.expect(c.partner("POST", user+"/family-members", map[string]any{"app_user_id": "x", "app_group_id": 99, "name": "X", "relationship": "SON"}), 404, "FAMILY_GROUP_NOT_FOUND")
	c.expect(c.partner("GET", user, nil), 200, 0)

	c.expect(c.partner("DELETE", fmt.Sprintf("%s/family-members/%d", user, reg.FamilyMembers[1].MemberID), nil), 200, 0)
	c.expect(c.partner("DELETE", fmt.Sprintf("%s/family-members/%d", user, reg.FamilyMembers[1].MemberID), nil), 404, "FAMILY_MEMBER_NOT_FOUND")
	c.expect(c.partner("DELETE", user+"/family-members/-3", nil), 422, "VALIDATION_ERROR")
	c.expect(c.partner("DELETE", fmt.Sprintf("%s/family-groups/%d", user, group.FamilyGroupID), nil), 200, 0)
	c.expect(c.partner("DELETE", fmt.Sprintf("%s/family-groups/%d", user, group.FamilyGroupID), nil), 404, "FAMILY_GROUP_NOT_FOUND")
	c.expect(c.partner("GET", user, nil), 200, 0)

	webhookTraffic(t, c, &client{t: t, base: c.base, http: c.http, appID: bare.AppID, appKey: bare.AppKey, secret: bare.AppSecret})
	reportTraffic(t, c, &client{t: t, base: c.base, http: c.http, appID: bare.AppID, appKey: bare.AppKey, secret: bare.AppSecret}, reg.OpenUserID, clock)
	orderTraffic(t, c, &client{t: t, base: c.base, http: c.http, appID: bare.AppID, appKey: bare.AppKey, secret: bare.AppSecret}, reg.OpenUserID)
	onboardingTraffic(t, c)
	permissionTraffic(t, c)
	benefitTraffic(t, c, clock)

	// Auditors.
	c.expect(c.admin("GET", fmt.Sprintf("/admin/v1/history?stream=user-%d", reg.OpenUserID), nil), 200, 0)
	c.expect(c.admin("GET", "/admin/v1/history", nil), 422, "VALIDATION_ERROR")
	c.expect(c.admin("GET", "/admin/v1/events?limit=5", nil), 200, 0)
	c.expect(c.admin("GET", "/admin/v1/events?limit=x", nil), 422, "VALIDATION_ERROR")
	c.expect(c.admin("GET", "/admin/v1/projections", nil), 200, 0)
	c.expect(c.admin("POST", "/admin/v1/projections/read_models/rebuild", nil), 202, 0)
	c.expect(c.admin("POST", "/admin/v1/projections/nope/rebuild", nil), 404, "PROJECTION_NOT_FOUND")
}

type feedPage struct {
	Events []struct {
		DeliveryID string `json:"delivery_id"`
		Event      string `json:"event"`
	} `json:"events"`
	NextCursor string `json:"next_cursor"`
	HasMore    bool   `json:"has_more"`
}

type deliveryPage struct {
	Deliveries []struct {
		DeliveryID string `json:"delivery_id"`
		Status     string `json:"status"`
	} `json:"deliveries"`
	NextCursor *string `json:"next_cursor"`
}

// webhookTraffic drives the webhook configuration, delivery-log, feed and
// resend operations. c is the partner app, which subscribes to
// health.report.* only, so its channel-user events are recorded as skipped
// deliveries; other is a second app. No webhook is sent: the test server
// runs no sender.
func webhookTraffic(t *testing.T, c, other *client) {
	t.Helper()
	app := fmt.Sprintf("/admin/v1/apps/%d", c.appID)
	c.expect(c.send("PATCH", app, map[string]any{}, nil), 401, "HTTP_401")
	c.expect(c.admin("PATCH", app, ``), 400, "HTTP_400")
	c.expect(c.admin("PATCH", app, `{"x":"`+strings.Repeat("a", 1<<20)+`"}`), 413, "PAYLOAD_TOO_LARGE")
	c.expect(c.admin("PATCH", app, map[string]any{"webhook_url": "ftp://example.com/hook", "webhook_events": []string{"user.*", "Bad*"}}), 422, "VALIDATION_ERROR")
	c.expect(c.admin("PATCH", app, map[string]any{"webhook_url": 5}), 422, "VALIDATION_ERROR")
	c.expect(c.admin("PATCH", app, map[string]any{"webhook_url": "https://example.com/hook"}), 200, 0)
	c.expect(c.admin("PATCH", app, map[string]any{"webhook_url": "https://example.com/hook"}), 200, 0)
	c.expect(c.admin("PATCH", "/admin/v1/apps/999999", map[string]any{"webhook_url": nil}), 404, "APP_NOT_FOUND")
	c.expect(c.admin("PATCH", "/admin/v1/apps/x", map[string]any{}), 422, "VALIDATION_ERROR")
	c.expect(c.admin("PATCH", app, map[string]any{"webhook_url": nil, "webhook_events": nil}), 200, 0)
	c.expect(c.admin("PATCH", app, map[string]any{"webhook_url": "", "webhook_events": []string{"health.report.*"}}), 200, 0)
	c.expect(c.admin("GET", app, nil), 200, 0)

	// The feed: deliveries are created asynchronously, so wait for the
	// event of the last channel-user write (the group dissolution), then
	// page through everything. Every payload is checked against the
	// ChannelUserWebhook schema by the validating transport.
	seen := map[string]int{}
	var ids []string
	deadline := time.Now().Add(10 * time.Second)
	for seen["user.family_group.deleted"] == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("feed never showed the dissolution: %v", seen)
		}
		seen, ids = map[string]int{}, nil
		after := ""
		for {
			var page feedPage
			c.expect(c.partner("GET", "/open/v1/webhooks/events?limit=4&after="+after, nil), 200, 0).data(t, &page)
			for _, e := range page.Events {
				seen[e.Event]++
				ids = append(ids, e.DeliveryID)
			}
			after = page.NextCursor
			if !page.HasMore {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, e := range []string{"user.profile.updated", "user.family_group.created", "user.family_group.deleted",
		"user.family_member.created", "user.family_member.updated", "user.family_member.deleted"} {
		if seen[e] == 0 {
			t.Errorf("the feed has no %s event: %v", e, seen)
		}
	}
	c.expect(c.partner("GET", "/open/v1/webhooks/events", nil), 200, 0)
	c.expect(c.send("GET", "/open/v1/webhooks/events", nil, nil), 401, "HTTP_401")
	c.expect(c.partner("GET", "/open/v1/webhooks/events?after=latest", nil), 422, "VALIDATION_ERROR")
	c.expect(c.partner("GET", "/open/v1/webhooks/events?limit=5000", nil), 422, "VALIDATION_ERROR")
	other.expect(other.partner("GET", "/open/v1/webhooks/events", nil), 200, 0)

	// The partner's delivery log.
	var page deliveryPage
	c.expect(c.partner("GET", "/open/v1/webhooks/deliveries?limit=3", nil), 200, 0).data(t, &page)
	if len(page.Deliveries) != 3 || page.NextCursor == nil {
		t.Fatalf("first page %+v", page)
	}
	c.expect(c.partner("GET", "/open/v1/webhooks/deliveries?limit=1000&after="+*page.NextCursor, nil), 200, 0).data(t, &page)
	if page.NextCursor != nil {
		t.Fatalf("last page has a next cursor: %+v", page)
	}
	c.expect(c.partner("GET", "/open/v1/webhooks/deliveries?status=skipped&event=user.profile.updated&from=2000-01-01&to=2100-01-01T00:00:00%2B08:00", nil), 200, 0).data(t, &page)
	if len(page.Deliveries) != 1 {
		t.Fatalf("filtered page %+v", page)
	}
	profile := page.Deliveries[0].DeliveryID
	c.expect(c.partner("GET", "/open/v1/webhooks/deliveries?status=lost&from=yesterday&after=x&limit=-1", nil), 422, "VALIDATION_ERROR")
	c.expect(c.send("GET", "/open/v1/webhooks/deliveries", nil, nil), 401, "HTTP_401")
	c.expect(c.partner("GET", "/open/v1/webhooks/deliveries/"+profile, nil), 200, 0)
	c.expect(c.partner("GET", "/open/v1/webhooks/deliveries/no-such-delivery", nil), 404, "DELIVERY_NOT_FOUND")
	other.expect(other.partner("GET", "/open/v1/webhooks/deliveries/"+profile, nil), 404, "DELIVERY_NOT_FOUND")

	// Partner resend: a skipped delivery is queued, then is pending.
	var resent struct {
		DeliveryID string `json:"delivery_id"`
		Queued     bool   `json:"queued"`
	}
	c.expect(c.partner("POST", "/open/v1/webhooks/deliveries/"+profile+"/resend", nil), 202, 0).data(t, &resent)
	if !resent.Queued || resent.DeliveryID != profile {
		t.Fatalf("resend %+v", resent)
	}
	c.expect(c.partner("POST", "/open/v1/webhooks/deliveries/"+profile+"/resend", nil), 202, 0).data(t, &resent)
	if resent.Queued {
		t.Fatalf("a pending delivery was queued again: %+v", resent)
	}
	c.expect(c.partner("GET", "/open/v1/webhooks/deliveries/"+profile, nil), 200, 0)
	c.expect(c.partner("POST", "/open/v1/webhooks/deliveries/no-such-delivery/resend", nil), 404, "DELIVERY_NOT_FOUND")
	other.expect(other.partner("POST", "/open/v1/webhooks/deliveries/"+profile+"/resend", nil), 404, "DELIVERY_NOT_FOUND")
	c.expect(c.send("POST", "/open/v1/webhooks/deliveries/"+profile+"/resend", nil, nil), 401, "HTTP_401")

	// Operators.
	c.expect(c.send("GET", "/admin/v1/deliveries", nil, nil), 401, "HTTP_401")
	c.expect(c.admin("GET", "/admin/v1/deliveries", nil), 200, 0)
	c.expect(c.admin("GET", fmt.Sprintf("/admin/v1/deliveries?app_id=%d&status=pending&limit=10", c.appID), nil), 200, 0).data(t, &page)
	if len(page.Deliveries) != 1 || page.Deliveries[0].DeliveryID != profile {
		t.Fatalf("pending deliveries %+v", page)
	}
	c.expect(c.admin("GET", "/admin/v1/deliveries?app_id=0&to=tomorrow", nil), 422, "VALIDATION_ERROR")
	c.expect(c.admin("GET", "/admin/v1/deliveries/"+ids[0], nil), 200, 0)
	c.expect(c.admin("GET", "/admin/v1/deliveries/no-such-delivery", nil), 404, "DELIVERY_NOT_FOUND")
	c.expect(c.send("GET", "/admin/v1/deliveries/"+ids[0], nil, nil), 401, "HTTP_401")
	c.expect(c.admin("POST", "/admin/v1/deliveries/"+ids[0]+"/resend", nil), 202, 0).data(t, &resent)
	if !resent.Queued {
		t.Fatalf("operator resend %+v", resent)
	}
	c.expect(c.admin("POST", "/admin/v1/deliveries/no-such-delivery/resend", nil), 404, "DELIVERY_NOT_FOUND")
	c.expect(c.admin("POST", "/admin/v1/deliveries/"+ids[0]+"/resend", `{"x":"`+strings.Repeat("a", 1<<20)+`"}`), 413, "PAYLOAD_TOO_LARGE")
	c.expect(c.send("POST", "/admin/v1/deliveries/"+ids[0]+"/resend", nil, nil), 401, "HTTP_401")

	var bulk struct {
		Queued int `json:"queued"`
	}
	c.expect(c.admin("POST", app+"/deliveries/resend?status=skipped&event=user.family_member.created", nil), 202, 0).data(t, &bulk)
	if bulk.Queued != seen["user.family_member.created"] {
		t.Fatalf("bulk resend queued %d, want %d", bulk.Queued, seen["user.family_member.created"])
	}
	c.expect(c.admin("POST", app+"/deliveries/resend?status=skipped&event=user.family_member.created", nil), 202, 0).data(t, &bulk)
	if bulk.Queued != 0 {
		t.Fatalf("bulk resend of nothing queued %d", bulk.Queued)
	}
	c.expect(c.admin("POST", "/admin/v1/apps/999999/deliveries/resend", nil), 404, "APP_NOT_FOUND")
	c.expect(c.admin("POST", app+"/deliveries/resend?status=gone", nil), 422, "VALIDATION_ERROR")
	c.expect(c.admin("POST", "/admin/v1/apps/0/deliveries/resend", nil), 422, "VALIDATION_ERROR")
	c.expect(c.send("POST", app+"/deliveries/resend", nil, nil), 401, "HTTP_401")
}

// signedH sends a scheme H request; nonce "" omits X-Nonce.
func (c *client) signedH(method, path string, body any, nonce string) reply {
	c.t.Helper()
	return c.send(method, path, body, func(h http.Header, raw []byte) {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		h.Set("X-App-Key", c.appKey)
		h.Set("X-Timestamp", ts)
		if nonce != "" {
			h.Set("X-Nonce", nonce)
		}
		h.Set("X-Signature", auth.SignH(c.secret, method, path, ts, nonce, raw))
	})
}

func (c *client) bearer(method, path, token string, body any) reply {
	c.t.Helper()
	return c.send(method, path, body, func(h http.Header, _ []byte) { h.Set("Authorization", "Bearer "+token) })
}

// form posts an OAuth form, with HTTP Basic when user is set, and returns
// the status and the RFC 6749 body (nil when empty).
func (c *client) form(path, body, user, pass string) (int, map[string]any) {
	c.t.Helper()
	req, err := http.NewRequest("POST", c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	res, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			c.t.Fatalf("%s: %v: %s", path, err, raw)
		}
	}
	return res.StatusCode, out
}

func (c *client) expectOAuth(path, body, user, pass string, status int, oauthError string) map[string]any {
	c.t.Helper()
	got, out := c.form(path, body, user, pass)
	if got != status || (oauthError != "" && out["error"] != oauthError) {
		c.t.Fatalf("%s: got %d %v, want %d %s", path, got, out, status, oauthError)
	}
	return out
}

var nonces atomic.Int64

func freshNonce() string { return fmt.Sprintf("n-%d-%d", time.Now().UnixNano(), nonces.Add(1)) }

// reportTraffic drives report ingestion and re-interpretation, the scheme H
// pull with its replay and rate limits, OAuth and the daily report, plugin
// sessions and measurements, and the sandbox mock; then reads the report
// and plugin events back from the feed and the delivery log. c is a
// sandbox app with the bound user openUserID (channel user u-1, phone
// 13812345678); other is another sandbox app.
func reportTraffic(t *testing.T, c, other *client, openUserID int64, clock *offsetClock) {
	newApp := func(name, environment string) *client {
		var creds struct {
			AppID     int64  `json:"app_id"`
			AppKey    string `json:"app_key"`
			AppSecret string `json:"app_secret"`
		}
		c.expect(c.admin("POST", "/admin/v1/apps", map[string]any{"name": name, "environment": environment, "scopes": []string{"channel_users", "orders", "health_reports", "daily_report", "webhooks", "benefits", "plugin"}}), 201, 0).data(t, &creds)
		return &client{t: t, base: c.base, http: c.http, appID: creds.AppID, appKey: creds.AppKey, secret: creds.AppSecret}
	}

	// Uploaders.
	c.expect(c.send("POST", "/admin/v1/uploaders", map[string]any{"name": "x"}, nil), 401, "HTTP_401")
	c.expect(c.admin("POST", "/admin/v1/uploaders", `{`), 400, "HTTP_400")
	c.expect(c.admin("POST", "/admin/v1/uploaders", `{"name":"`+strings.Repeat("a", 1<<20)+`"}`), 413, "PAYLOAD_TOO_LARGE")
	c.expect(c.admin("POST", "/admin/v1/uploaders", map[string]any{"name": ""}), 422, "VALIDATION_ERROR")
	var uploader struct {
		Token string `json:"token"`
	}
	c.expect(c.admin("POST", "/admin/v1/uploaders", map[string]any{"name": "station network"}), 201, 0).data(t, &uploader)

	// Ingestion.
	today := time.Now().In(time.FixedZone("CST", 8*3600)).Format(time.DateOnly)
	report := map[string]any{
		"open_user_id": openUserID, "request_report_id": "R-1", "measurement_no": "M-1", "device_sn": "SN9", "report_type": "BLOOD_PRESSURE",
		"file_path": nil, "interpretation_result": "normal", "interpretation_method": "ai", "interpretation_detail": map[string]any{"risk_level": "low"},
		"examined_at": today + "T09:30:00+08:00", "interpreted_at": nil,
		"meta":     map[string]any{"points_code": "P001", "data_source": "station", "operator_name": "Nurse Wu", "operator_platform_user_id": 77},
		"raw_data": map[string]any{"indicators": []any{map[string]any{"code": "heart_rate", "value": 72, "unit": "bpm"}, map[string]any{"code": "spo2", "value": 97, "unit": "%"}}, "report": map[string]any{"raw_data": map[string]any{"dat_base64": "QUJD"}}},
	}
	const ingest = "/admin/v1/health-reports"
	c.expect(c.bearer("POST", ingest, "upl_wrong", report), 401, "HTTP_401")
	c.expect(c.send("POST", ingest, report, nil), 401, "HTTP_401")
	c.expect(c.bearer("POST", ingest, uploader.Token, `[1]`), 400, "HTTP_400")
	c.expect(c.bearer("POST", ingest, uploader.Token, `{"raw_data":"`+strings.Repeat("a", 1<<20)+`"}`), 413, "PAYLOAD_TOO_LARGE")
	c.expect(c.bearer("POST", ingest, uploader.Token, map[string]any{"raw_data": []any{1}, "examined_at": "yesterday", "meta": map[string]any{"data_source": strings.Repeat("s", 33)}}), 422, "VALIDATION_ERROR")
	c.expect(c.bearer("POST", ingest, uploader.Token, map[string]any{"open_user_id": openUserID, "open_member_id": 999999, "raw_data": map[string]any{}}), 422, "VALIDATION_ERROR")
	c.expect(c.bearer("POST", ingest, uploader.Token, map[string]any{"open_user_id": 987654, "raw_data": map[string]any{}}), 422, "USER_NOT_BOUND")
	var created, again struct {
		ID      int64 `json:"id"`
		Created bool  `json:"created"`
	}
	c.expect(c.bearer("POST", ingest, uploader.Token, report), 201, 0).data(t, &created)
	c.expect(c.bearer("POST", ingest, uploader.Token, report), 200, 0).data(t, &again)
	if !created.Created || again.Created || again.ID != created.ID {
		t.Fatalf("idempotent upload: %+v then %+v", created, again)
	}
	// The same report number for another user is a conflict.
	var third struct {
		OpenUserID int64 `json:"open_user_id"`
	}
	c.expect(c.partner("POST", "/open/v1/channel/users", map[string]any{"channel_user_id": "u-3", "user": map[string]any{"name": "Third"}}), 201, 0).data(t, &third)
	reused := map[string]any{"open_user_id": third.OpenUserID, "request_report_id": "R-1", "raw_data": map[string]any{}}
	c.expect(c.bearer("POST", ingest, uploader.Token, reused), 409, "DUPLICATE_REQUEST_REPORT_ID")
	var byOperator struct {
		ID int64 `json:"id"`
	}
	c.expect(c.admin("POST", ingest, map[string]any{"open_user_id": openUserID, "raw_data": map[string]any{}}), 201, 0).data(t, &byOperator)

	// Re-interpretation.
	reportPath := fmt.Sprintf("%s/%d", ingest, created.ID)
	c.expect(c.bearer("PATCH", reportPath, "upl_wrong", map[string]any{}), 401, "HTTP_401")
	c.expect(c.bearer("PATCH", reportPath, uploader.Token, ``), 400, "HTTP_400")
	c.expect(c.bearer("PATCH", reportPath, uploader.Token, map[string]any{"interpretation_result": "elevated", "interpretation_detail": map[string]any{"risk_level": "medium"}}), 200, 0)
	c.expect(c.admin("PATCH", reportPath, map[string]any{}), 200, 0)
	c.expect(c.bearer("PATCH", reportPath, uploader.Token, map[string]any{"interpretation_detail": "high", "interpreted_at": "soon"}), 422, "VALIDATION_ERROR")
	c.expect(c.bearer("PATCH", ingest+"/abc", uploader.Token, map[string]any{}), 422, "VALIDATION_ERROR")
	c.expect(c.bearer("PATCH", ingest+"/999999", uploader.Token, map[string]any{"file_path": "x"}), 404, "REPORT_NOT_FOUND")
	var foreign struct {
		Token string `json:"token"`
	}
	c.expect(c.admin("POST", "/admin/v1/uploaders", map[string]any{"name": "another network"}), 201, 0).data(t, &foreign)
	c.expect(c.bearer("PATCH", reportPath, foreign.Token, map[string]any{"file_path": "x"}), 404, "REPORT_NOT_FOUND")

	// The pull: is_viewed false on the first pull, true later; another
	// app's or an unknown report is a 404 without a code.
	pull := fmt.Sprintf("/open/v1/health-reports/%d", created.ID)
	var first struct {
		ID                   int64           `json:"id"`
		IsViewed             bool            `json:"is_viewed"`
		InterpretationResult string          `json:"interpretation_result"`
		RawData              json.RawMessage `json:"raw_data"`
	}
	c.expect(c.signedH("GET", pull, nil, freshNonce()), 200, 0).data(t, &first)
	if first.ID != created.ID || first.IsViewed || first.InterpretationResult != "elevated" || strings.Contains(string(first.RawData), "dat_base64") {
		t.Fatalf("first pull %+v", first)
	}
	viewed := false
	for i := 0; i < 20 && !viewed; i++ {
		var later struct {
			IsViewed bool `json:"is_viewed"`
		}
		c.expect(c.signedH("GET", pull, nil, ""), 200, 0).data(t, &later)
		viewed = later.IsViewed
		time.Sleep(10 * time.Millisecond)
	}
	if !viewed {
		t.Fatal("is_viewed stayed false after the first pull")
	}
	c.expect(c.signedH("GET", fmt.Sprintf("/open/v1/health-reports/%d", byOperator.ID), nil, freshNonce()), 200, 0)
	other.expect(other.signedH("GET", pull, nil, freshNonce()), 404, nil)
	c.expect(c.signedH("GET", "/open/v1/health-reports/999999", nil, freshNonce()), 404, nil)
	c.expect(c.signedH("GET", "/open/v1/health-reports/abc", nil, freshNonce()), 404, nil)
	c.expect(c.send("GET", pull, nil, nil), 401, "MISSING_APP_KEY")
	c.expect(c.send("GET", pull, nil, func(h http.Header, _ []byte) {
		h.Set("X-App-Key", c.appKey)
		h.Set("X-Timestamp", strconv.FormatInt(time.Now().Unix(), 10))
		h.Set("X-Signature", strings.Repeat("ab", 32))
	}), 401, "INVALID_SIGNATURE")
	replayed := freshNonce()
	c.expect(c.signedH("GET", pull+"?x=1", nil, replayed), 200, 0)
	c.expect(c.signedH("GET", pull+"?x=1", nil, replayed), 401, "INVALID_SIGNATURE")
	c.expect(c.send("GET", pull, `{"x":"`+strings.Repeat("a", 1<<20)+`"}`, nil), 413, "PAYLOAD_TOO_LARGE")
	limited := newApp("limited", "sandbox")
	for i := 0; ; i++ {
		r := limited.signedH("GET", pull, nil, freshNonce())
		if r.status == http.StatusTooManyRequests {
			limited.expect(r, 429, nil)
			break
		}
		limited.expect(r, 404, nil)
		if i > 200 { // 60 per minute, refilled at one per second
			t.Fatal("the pull was never rate limited")
		}
	}

	// OAuth and the daily report.
	const token, revoke, daily = "/oauth/token", "/oauth/revoke", "/v1/health/daily-report"
	tok := c.expectOAuth(token, "grant_type=client_credentials", c.appKey, c.secret, 200, "")
	if tok["token_type"] != "Bearer" || tok["expires_in"] != float64(7200) || tok["scope"] != "daily_report" {
		t.Fatalf("token %v", tok)
	}
	access := tok["access_token"].(string)
	viaForm := c.expectOAuth(token, "grant_type=client_credentials&scope=daily_report&client_id="+c.appKey+"&client_secret="+c.secret, "", "", 200, "")["access_token"].(string)
	c.expectOAuth(token, "grant_type=client_credentials", c.appKey, "wrong", 401, "invalid_client")
	c.expectOAuth(token, "grant_type=client_credentials", "", "", 401, "invalid_client")
	c.expectOAuth(token, "grant_type=password", c.appKey, c.secret, 400, "unsupported_grant_type")
	c.expectOAuth(token, "grant_type=client_credentials&scope=admin", c.appKey, c.secret, 400, "invalid_scope")
	c.expectOAuth(token, "grant_type=%zz", c.appKey, c.secret, 400, "invalid_request")
	c.expectOAuth(token, "scope=daily_report", c.appKey, c.secret, 400, "invalid_request")
	dailyReport := func(query, token, appKey string) reply {
		return c.send("GET", daily+"?"+query, nil, func(h http.Header, _ []byte) {
			if token != "" {
				h.Set("Authorization", "Bearer "+token)
			}
			h.Set("X-App-Key", appKey)
		})
	}
	var d struct {
		Date      string `json:"date"`
		HeartRate *struct {
			Avg float64 `json:"avg"`
		} `json:"heartRate"`
	}
	c.expect(dailyReport(fmt.Sprintf("open_user_id=%d&date=%s", openUserID, today), access, c.appKey), 200, 0).data(t, &d)
	if d.Date != today || d.HeartRate == nil || d.HeartRate.Avg != 72 {
		t.Fatalf("daily report %+v", d)
	}
	c.expect(dailyReport("channel_user_id=u-1&date=2020-01-01", viaForm, c.appKey), 200, 0)
	c.expect(dailyReport("channel_user_id=u-1", access, c.appKey), 200, 0)
	c.expect(dailyReport("open_user_id=1", "", c.appKey), 401, "MISSING_TOKEN")
	c.expect(dailyReport("open_user_id=1", "at_nope", c.appKey), 401, "INVALID_TOKEN")
	c.expect(dailyReport("open_user_id=1", access, other.appKey), 401, "INVALID_TOKEN")
	c.expect(dailyReport("open_user_id=999999", access, c.appKey), 404, "USER_NOT_FOUND")
	c.expect(dailyReport("channel_user_id=nobody", access, c.appKey), 404, "USER_NOT_FOUND")
	c.expect(dailyReport("open_user_id=1&date=2020-13-01", access, c.appKey), 422, "VALIDATION_ERROR")
	c.expect(dailyReport("", access, c.appKey), 422, "VALIDATION_ERROR")
	c.expectOAuth(revoke, "token="+viaForm, c.appKey, c.secret, 200, "")
	c.expectOAuth(revoke, "token=at_unknown&client_id="+c.appKey+"&client_secret="+c.secret, "", "", 200, "")
	c.expectOAuth(revoke, "", c.appKey, c.secret, 400, "invalid_request")
	c.expectOAuth(revoke, "token="+access, c.appKey, "wrong", 401, "invalid_client")
	c.expect(dailyReport("channel_user_id=u-1", viaForm, c.appKey), 401, "INVALID_TOKEN")

	// Plugin sessions and measurements.
	launch, err := measureplugin.NewLaunch(c.appKey, c.secret, "host user 1", measureplugin.Profile{Phone: "13812345678", Metadata: "order-9"}, "HOME_MULTI_BIO_MONITOR", "BP", true, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var session struct {
		SessionID  string `json:"session_id"`
		ReportType string `json:"report_type"`
	}
	c.expect(c.send("POST", "/plugin/v1/sessions", launch, nil), 201, 0).data(t, &session)
	c.expect(c.send("POST", "/plugin/v1/sessions", launch, nil), 401, "NONCE_ALREADY_USED")
	tampered := launch
	tampered.Nonce, tampered.Sign = freshNonce(), strings.Repeat("0", 64)
	c.expect(c.send("POST", "/plugin/v1/sessions", tampered, nil), 401, "INVALID_SIGNATURE")
	unknownKey := launch
	unknownKey.AppKey = "ak_nobody"
	c.expect(c.send("POST", "/plugin/v1/sessions", unknownKey, nil), 401, "INVALID_SIGNATURE")
	badMode := launch
	badMode.Nonce, badMode.MeasureMode = freshNonce(), "ECG"
	badMode.Sign = measureplugin.Sign(c.secret, c.appKey, badMode.ThirdUserID, badMode.Timestamp, badMode.Nonce)
	c.expect(c.send("POST", "/plugin/v1/sessions", badMode, nil), 422, "VALIDATION_ERROR")
	c.expect(c.send("POST", "/plugin/v1/sessions", map[string]any{"appKey": c.appKey}, nil), 422, "VALIDATION_ERROR")
	c.expect(c.send("POST", "/plugin/v1/sessions", `"launch"`, nil), 400, "HTTP_400")
	c.expect(c.send("POST", "/plugin/v1/sessions", `{"appKey":"`+strings.Repeat("a", 1<<20)+`"}`, nil), 413, "PAYLOAD_TOO_LARGE")

	measure := "/plugin/v1/sessions/" + session.SessionID + "/measurements"
	var m1, m2 struct {
		MeasureID     string `json:"measureId"`
		MeasurementNo string `json:"measurement_no"`
	}
	c.expect(c.send("POST", measure, map[string]any{"device_sn": strings.Repeat("s", 101), "data": map[string]any{"systolic": 121}}, nil), 422, "VALIDATION_ERROR")
	c.expect(c.send("POST", measure, map[string]any{"data": []any{}}, nil), 422, "VALIDATION_ERROR")
	c.expect(c.send("POST", measure, map[string]any{"device_sn": "BP-1", "data": map[string]any{"systolic": 121, "diastolic": 79}}, nil), 201, 0).data(t, &m1)
	c.expect(c.send("POST", measure, map[string]any{"data": map[string]any{"systolic": 1}}, nil), 201, 0).data(t, &m2)
	if m1.MeasureID == "" || m1.MeasureID != m1.MeasurementNo || m2.MeasureID != m1.MeasureID {
		t.Fatalf("measurements %+v then %+v", m1, m2)
	}
	c.expect(c.send("POST", "/plugin/v1/sessions/nope/measurements", map[string]any{"data": map[string]any{}}, nil), 404, "SESSION_NOT_FOUND")
	c.expect(c.send("POST", measure, ``, nil), 400, "HTTP_400")
	late, err := measureplugin.NewLaunch(c.appKey, c.secret, "host user 2", measureplugin.Profile{}, "HOME_SPO2_RING", "SPO2", true, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var lateSession struct {
		SessionID string `json:"session_id"`
	}
	c.expect(c.send("POST", "/plugin/v1/sessions", late, nil), 201, 0).data(t, &lateSession)
	clock.offset.Store(int64(commands.SessionLifetime))
	c.expect(c.send("POST", "/plugin/v1/sessions/"+lateSession.SessionID+"/measurements", map[string]any{"data": map[string]any{"spo2": 97}}, nil), 410, "SESSION_EXPIRED")
	clock.offset.Store(0)

	// The sandbox mock.
	mock := map[string]any{"appKey": c.appKey, "thirdUserId": "t1", "deviceKey": "HOME_SPO2_RING", "measureMode": "SPO2"}
	var mocked struct {
		MeasureID string `json:"measureId"`
	}
	c.expect(c.signedH("POST", "/sandbox/mock/measure", mock, freshNonce()), 200, 0).data(t, &mocked)
	c.expect(c.signedH("POST", "/sandbox/mock/measure", mock, ""), 200, 0)
	c.expect(other.signedH("POST", "/sandbox/mock/measure", mock, freshNonce()), 422, "VALIDATION_ERROR")
	c.expect(c.signedH("POST", "/sandbox/mock/measure", map[string]any{"appKey": c.appKey, "thirdUserId": "t1", "deviceKey": "HOME_SPO2_RING", "measureMode": "BP"}, freshNonce()), 422, "VALIDATION_ERROR")
	c.expect(c.signedH("POST", "/sandbox/mock/measure", `{`, freshNonce()), 400, "HTTP_400")
	c.expect(c.send("POST", "/sandbox/mock/measure", mock, nil), 401, "MISSING_APP_KEY")
	c.expect(c.send("POST", "/sandbox/mock/measure", `{"x":"`+strings.Repeat("a", 1<<20)+`"}`, nil), 413, "PAYLOAD_TOO_LARGE")
	prod := newApp("production host", "production")
	prod.expect(prod.signedH("POST", "/sandbox/mock/measure", map[string]any{"appKey": prod.appKey, "thirdUserId": "t1", "deviceKey": "HOME_SPO2_RING", "measureMode": "SPO2"}, freshNonce()), 403, "SANDBOX_ONLY")

	// The report and plugin events reach the feed and the delivery log,
	// whose payloads the validating transport checks against the document.
	want := []string{"health.report.created", "health.report.updated", "plugin.report.ready"}
	seen := map[string]string{}
	deadline := time.Now().Add(10 * time.Second)
	for len(seen) < len(want) {
		if time.Now().After(deadline) {
			t.Fatalf("the feed never showed %v: %v", want, seen)
		}
		after := ""
		for {
			var page feedPage
			c.expect(c.partner("GET", "/open/v1/webhooks/events?limit=1000&after="+after, nil), 200, 0).data(t, &page)
			for _, e := range page.Events {
				if slices.Contains(want, e.Event) {
					seen[e.Event] = e.DeliveryID
				}
			}
			after = page.NextCursor
			if !page.HasMore {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, e := range want {
		c.expect(c.partner("GET", "/open/v1/webhooks/deliveries/"+seen[e], nil), 200, 0)
	}
}

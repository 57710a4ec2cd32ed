package partneropen

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// platform is a real platform process started for one test.
type platform struct {
	t     *testing.T
	base  string
	admin string
}

func randHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// startPlatform runs $PLATFORM_BIN (or a fresh build of ./cmd/platform) on
// a free loopback port with a fresh data directory; cleanup kills it and
// removes the directory, also when the test fails.
func startPlatform(t *testing.T, extraEnv ...string) *platform {
	t.Helper()
	if os.Getenv("PLATFORM_SDK_INTEGRATION") == "0" {
		t.Skip("PLATFORM_SDK_INTEGRATION=0")
	}
	bin := os.Getenv("PLATFORM_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "platform")
		build := exec.Command("go", "build", "-o", bin, "./cmd/platform")
		build.Dir = filepath.Join("..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build platform: %v\n%s", err, out)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	p := &platform{t: t, base: "http://" + addr, admin: "adm_" + randHex(t, 16)}
	var logs bytes.Buffer
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"PLATFORM_ADDR="+addr, "PLATFORM_DATA_DIR="+dir, "PLATFORM_ADMIN_TOKEN="+p.admin,
		"PLATFORM_MASTER_KEY="+randHex(t, 32), "PLATFORM_INTERNAL_TOKEN=int_"+randHex(t, 12),
		"PLATFORM_WEBHOOK_ALLOW_LOOPBACK=on", "PLATFORM_WEBHOOK_RETRY_SCHEDULE=1s,1s,1s",
		"PLATFORM_EVENTSTORE_URL=", "PLATFORM_ESDB_URL=", "PLATFORM_POSTGRES_URL=", "PLATFORM_KAFKA_BROKERS=")
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("platform log (tail):\n%s", tail(logs.String(), 4000))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(p.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("platform not ready after 60 s (%v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// call sends an admin (or uploader) request with a bearer token and decodes data.
func (p *platform) call(token, method, path string, body any, want int, out any) {
	p.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, p.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		p.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		var env struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(raw, &env); err != nil || json.Unmarshal(env.Data, out) != nil {
			p.t.Fatalf("%s %s: undecodable %s", method, path, raw)
		}
	}
}

// appCreds are what the admin API returns for a new app.
type appCreds struct {
	AppID         int64  `json:"app_id"`
	AppKey        string `json:"app_key"`
	AppSecret     string `json:"app_secret"`
	WebhookSecret string `json:"webhook_secret"`
}

// newApp creates an app with every partner scope and an SDK client for it,
// waiting (bounded) until the app authenticates.
func (p *platform) newApp(name, webhookURL string) (appCreds, *Client) {
	p.t.Helper()
	body := map[string]any{"name": name, "scopes": []string{"channel_users", "orders", "health_reports", "daily_report", "webhooks", "benefits", "plugin"}}
	if webhookURL != "" {
		body["webhook_url"] = webhookURL
	}
	var a appCreds
	p.call(p.admin, "POST", "/admin/v1/apps", body, http.StatusCreated, &a)
	c, err := NewClient(WithBaseURL(p.base), WithCredentials(fmt.Sprint(a.AppID), a.AppKey, a.AppSecret))
	if err != nil {
		p.t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := c.GetSnapshot(context.Background(), 1<<40, SnapshotQuery{})
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.Code == "USER_NOT_FOUND" {
			return a, c
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("app %d never authenticated: %v", a.AppID, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hookReceiver is the partner's loopback webhook endpoint, verifying with the SDK.
type hookReceiver struct {
	mu      sync.Mutex
	secrets []string
	events  []*Event
	bad     []error
	srv     *httptest.Server
}

func newReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		secrets := append([]string(nil), h.secrets...)
		h.mu.Unlock()
		if len(secrets) == 0 {
			w.WriteHeader(http.StatusServiceUnavailable) // not configured yet: the platform retries
			return
		}
		// During a rotation a delivery may be signed with the old or the
		// new secret: accept either, as a partner's receiver must.
		ev, body, err := VerifyRequest(secrets[0], r)
		for _, s := range secrets[1:] {
			if !errors.Is(err, ErrBadSignature) {
				break
			}
			if err = VerifyWebhook(s, r.Header.Get("X-Webhook-Timestamp"), r.Header.Get("X-Webhook-Signature"), body); err == nil {
				ev, err = ParseEvent(body)
			}
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if err != nil && !errors.Is(err, ErrUnknownEvent) {
			h.bad = append(h.bad, err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if ev != nil && r.Header.Get("X-Webhook-Id") != ev.DeliveryID {
			h.bad = append(h.bad, fmt.Errorf("X-Webhook-Id %s, body delivery_id %s", r.Header.Get("X-Webhook-Id"), ev.DeliveryID))
		}
		h.events = append(h.events, ev)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// await waits (bounded) for an event matching f.
func (h *hookReceiver) await(t *testing.T, what string, f func(*Event) bool) *Event {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		h.mu.Lock()
		for _, e := range h.events {
			if e != nil && f(e) {
				h.mu.Unlock()
				return e
			}
		}
		bad := append([]error(nil), h.bad...)
		h.mu.Unlock()
		if len(bad) > 0 {
			t.Fatalf("receiver refused deliveries: %v", bad)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s webhook within 30 s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPartnerDayAgainstThePlatform runs a partner's day through the SDK
// against a real platform process.
func TestPartnerDayAgainstThePlatform(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	p := startPlatform(t)
	ctx := context.Background()
	rcv := newReceiver(t)
	app, c := p.newApp("sdk partner", rcv.srv.URL+"/hooks")
	rcv.mu.Lock()
	rcv.secrets = []string{app.WebhookSecret}
	rcv.mu.Unlock()

	// Register a user with a family, idempotently.
	reg := RegisterRequest{ChannelUserID: "sdk-u-1", User: UserProfile{Name: "Li Lei", Phone: Ptr("13812345678")},
		FamilyGroups:  []FamilyGroupInput{{AppGroupID: 1, Name: "Home"}},
		FamilyMembers: []FamilyMemberRegisterInput{{AppUserID: "m-self", AppGroupID: 1, Name: "Li Lei", Relationship: "SELF"}}}
	r1, err := c.RegisterUser(ctx, reg, WithIdempotencyKey(Idempotent()))
	if err != nil {
		t.Fatal(err)
	}
	if !r1.Created || r1.OpenUserID == 0 || len(r1.FamilyGroups) != 1 || len(r1.FamilyMembers) != 1 {
		t.Fatalf("register: %+v", r1)
	}
	r2, err := c.RegisterUser(ctx, reg)
	if err != nil || r2.Created || r2.OpenUserID != r1.OpenUserID {
		t.Fatalf("repeat register: %+v %v", r2, err)
	}
	// Duplicate registrations racing: one user, exactly one created=true.
	var wg sync.WaitGroup
	results := make([]*RegisterResult, 6)
	errs := make([]error, 6)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = c.RegisterUser(ctx, RegisterRequest{ChannelUserID: "sdk-race", User: UserProfile{Name: "Race"}})
		}()
	}
	wg.Wait()
	created := 0
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("concurrent register %d: %v", i, errs[i])
		}
		if r.OpenUserID != results[0].OpenUserID {
			t.Fatalf("concurrent registers made two users: %d and %d", r.OpenUserID, results[0].OpenUserID)
		}
		if r.Created {
			created++
		}
	}
	if created != 1 {
		t.Fatalf("%d of the concurrent registers say created", created)
	}
	// PATCH sets a nickname; ClearFields clears it with an explicit null.
	if err := c.UpdateUser(ctx, r1.OpenUserID, UserPatch{Nickname: Ptr("Lei")}); err != nil {
		t.Fatal(err)
	}
	if s, err := c.GetSnapshot(ctx, r1.OpenUserID, SnapshotQuery{}); err != nil || s.User.Nickname == nil || *s.User.Nickname != "Lei" {
		t.Fatalf("nickname not set: %+v %v", s, err)
	}
	if err := c.UpdateUser(ctx, r1.OpenUserID, UserPatch{}, ClearFields("nickname")); err != nil {
		t.Fatal(err)
	}
	if s, err := c.GetSnapshot(ctx, r1.OpenUserID, SnapshotQuery{}); err != nil || s.User.Nickname != nil {
		t.Fatalf("nickname not cleared: %+v %v", s.User.Nickname, err)
	}
	// Upsert a member, then read the snapshot.
	m, err := c.UpsertFamilyMember(ctx, r1.OpenUserID, FamilyMemberUpsertInput{AppUserID: "m-kid", AppGroupID: 1, Name: "Li Xiaolei", Relationship: "SON", Height: Ptr[int64](120)})
	if err != nil || !m.Created || m.MemberID == 0 {
		t.Fatalf("member: %+v %v", m, err)
	}
	snap, err := c.GetSnapshot(ctx, r1.OpenUserID, SnapshotQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if snap.User.OpenUserID != r1.OpenUserID || len(snap.FamilyMembers) != 2 || len(snap.FamilyGroups) != 1 || snap.FamilyGroups[0].MemberCount != 2 {
		t.Fatalf("snapshot: %+v", snap)
	}
	if snap.User.Phone == nil || *snap.User.Phone == "13812345678" {
		t.Fatalf("phone not masked in snapshot: %v", snap.User.Phone)
	}
	// Order a good.
	p.call(p.admin, "POST", "/admin/v1/goods", map[string]any{"goods_code": "BP-01", "goods_name": "BP monitor"}, http.StatusCreated, nil)
	ord, err := c.CreateOrder(ctx, OrderCreateRequest{ThirdOrderID: "T-1", ContactPerson: "Li Lei", ContactPhone: "13812345678", Address: "1 Road",
		Items: []OrderItemInput{{GoodsCode: "BP-01", Quantity: 2, UnitPrice: 1999}}}, WithIdempotencyKey(Idempotent()))
	if err != nil || ord.OrderCode == "" {
		t.Fatalf("order: %+v %v", ord, err)
	}
	det, err := c.GetOrder(ctx, ord.OrderCode)
	if err != nil || det.OrderStatus != "PENDING_REVIEW" || len(det.Items) != 1 || det.Items[0].TotalPrice != 3998 {
		t.Fatalf("order detail: %+v %v", det, err)
	}
	// A report is ingested by an uploader, pushed by webhook, pulled with scheme H.
	var up struct {
		Token string `json:"token"`
	}
	p.call(p.admin, "POST", "/admin/v1/uploaders", map[string]any{"name": "station"}, http.StatusCreated, &up)
	var ing struct {
		ID int64 `json:"id"`
	}
	p.call(up.Token, "POST", "/admin/v1/health-reports", map[string]any{"open_user_id": r1.OpenUserID, "report_type": "BLOOD_PRESSURE",
		"measurement_no": "M-1", "raw_data": map[string]any{"indicators": []any{map[string]any{"code": "sbp", "value": 120, "unit": "mmHg"}}}}, http.StatusCreated, &ing)
	ev := rcv.await(t, "health.report.created", func(e *Event) bool {
		return e.HealthReport != nil && e.Type == "health.report.created" && e.HealthReport.OpenReportID == ing.ID
	})
	if ev.HealthReport.ChannelUserID != "sdk-u-1" || ev.HealthReport.OpenUserID != r1.OpenUserID {
		t.Fatalf("report webhook: %+v", ev.HealthReport)
	}
	rep, err := c.PullHealthReport(ctx, ev.HealthReport.OpenReportID)
	if err != nil || rep.ID != ing.ID || rep.OpenUserID != r1.OpenUserID || len(rep.RawData) == 0 {
		t.Fatalf("pull: %+v %v", rep, err)
	}
	// The same delivery is in the delivery log, walked with the iterator.
	found := false
	for d, err := range c.AllDeliveries(ctx, DeliveryFilter{Event: "health.report.created", Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		found = found || d.DeliveryID == ev.DeliveryID
	}
	if !found {
		t.Fatalf("delivery %s not in the delivery log", ev.DeliveryID)
	}
	// Benefits: a station app verifies a use of a card the partner issued.
	station, sc := p.newApp("sdk station", "")
	_ = station
	var item struct {
		ID int64 `json:"benefit_item_id"`
	}
	p.call(p.admin, "POST", "/admin/v1/benefit-items", map[string]any{"name": "Check-up"}, http.StatusCreated, &item)
	sp, err := sc.RegisterServiceProvider(ctx, ProviderRegistration{Name: "Station 1", Type: "HEALTH_STATION", Contact: "010-1", PointsCode: Ptr("P-1")})
	if err != nil {
		t.Fatal(err)
	}
	var cp struct {
		ID int64 `json:"provider_id"`
	}
	p.call(p.admin, "POST", "/admin/v1/service-providers", map[string]any{"app_id": app.AppID, "name": "Insurer", "type": "CHANNEL_PARTNER", "contact": "x"}, http.StatusCreated, &cp)
	for _, id := range []int64{sp.ProviderID, cp.ID} {
		p.call(p.admin, "POST", fmt.Sprintf("/admin/v1/service-providers/%d/review", id), map[string]any{"decision": "approve"}, http.StatusOK, nil)
	}
	p.call(p.admin, "PUT", fmt.Sprintf("/admin/v1/service-providers/%d/benefit-items", sp.ProviderID), map[string]any{"allowed_benefit_item_ids": []int64{item.ID}}, http.StatusOK, nil)
	cards, err := c.BatchIssueCards(ctx, BatchIssueRequest{BatchID: Ptr("sdk-b-1"), Cards: []CardInput{{HolderName: "Han Meimei", HolderPhone: Ptr("13987654321"),
		ExpiresAt: time.Now().Add(48 * time.Hour).Format(time.RFC3339), Items: []CardItemInput{{BenefitItemID: item.ID, Quantity: 3}}}}})
	if err != nil || len(cards.Cards) != 1 {
		t.Fatalf("issue: %+v %v", cards, err)
	}
	v, err := sc.VerifyUse(ctx, VerifyUseRequest{CardNumber: cards.Cards[0].CardNumber, BenefitItemID: Ptr(item.ID), PointsCode: Ptr("P-1")})
	if err != nil || v.FulfillmentRecordID == 0 || v.QuantityUsed != 1 || v.RemainingQuantity != 2 {
		t.Fatalf("verify-use: %+v %v", v, err)
	}
	// The station sees the record in its fulfillments, the issuer too.
	for _, who := range []struct {
		c    *Client
		role string
	}{{sc, "provider"}, {c, "issuer"}} {
		seen := false
		for f, err := range who.c.AllFulfillments(ctx, who.role, 1) {
			if err != nil {
				t.Fatal(err)
			}
			seen = seen || (f.FulfillmentRecordID == v.FulfillmentRecordID && f.Status == "COMPLETED")
		}
		if !seen {
			t.Fatalf("record %d not listed for the %s", v.FulfillmentRecordID, who.role)
		}
	}
	// A second verification at once is a typed 422 DUPLICATE_FULFILLMENT.
	_, err = sc.VerifyUse(ctx, VerifyUseRequest{CardNumber: cards.Cards[0].CardNumber, BenefitItemID: Ptr(item.ID), PointsCode: Ptr("P-1")})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 422 || apiErr.Code != "DUPLICATE_FULFILLMENT" || apiErr.RequestID == "" {
		t.Fatalf("duplicate verify-use: %v", err)
	}
	// Errors surface typed: status, code, request id.
	_, err = c.GetSnapshot(ctx, r1.OpenUserID+1000, SnapshotQuery{})
	if !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.Code != "USER_NOT_FOUND" || apiErr.RequestID == "" {
		t.Fatalf("missing user: %v", err)
	}
	_, err = c.RegisterUser(ctx, RegisterRequest{ChannelUserID: "sdk-u-2", User: UserProfile{Name: "X", Phone: Ptr("123")}})
	if !errors.As(err, &apiErr) || apiErr.Status != 422 || apiErr.Code != "VALIDATION_ERROR" || len(apiErr.FieldErrors["user.phone"]) == 0 {
		t.Fatalf("validation: %v", err)
	}
	// Webhook secret rotation back to back (two bodyless writes, usually in one second).
	pend, err := c.RotateWebhookSecret(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	rcv.secrets = append(rcv.secrets, pend.PendingWebhookSecret)
	rcv.mu.Unlock()
	if _, err := c.ActivateWebhookSecret(ctx); err != nil {
		t.Fatalf("activate right after rotate: %v", err)
	}
	sameSecondUnderSchemeH(t, p, app)
	schemeMByOption(t, p, app)
	// Daily report through the OAuth token flow.
	tok, err := c.Token(ctx)
	if err != nil || tok.AccessToken == "" {
		t.Fatalf("token: %+v %v", tok, err)
	}
	daily, err := c.DailyReport(ctx, tok.AccessToken, DailyReportQuery{OpenUserID: r1.OpenUserID})
	if err != nil || daily.Date == "" {
		t.Fatalf("daily report: %+v %v", daily, err)
	}
	// The sandbox mock sends plugin.report.ready, now signed with the new secret.
	meas, err := c.SandboxMockMeasure(ctx, MockMeasureRequest{AppKey: app.AppKey, ThirdUserID: "third-1", DeviceKey: "HOME_MULTI_BIO_MONITOR", MeasureMode: "BP"})
	if err != nil {
		t.Fatal(err)
	}
	ready := rcv.await(t, "plugin.report.ready", func(e *Event) bool {
		return e.PluginReportReady != nil && e.PluginReportReady.MeasurementNo == meas.MeasurementNo
	})
	if ready.PluginReportReady.ThirdUserID == nil || *ready.PluginReportReady.ThirdUserID != "third-1" {
		t.Fatalf("plugin event %+v", ready.PluginReportReady)
	}
}

// recordingTransport keeps the headers of every request it sends.
type recordingTransport struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (rt *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	rt.reqs = append(rt.reqs, r)
	rt.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// sameSecondUnderSchemeH: with the default scheme, a register, a snapshot
// read and a bodyless DELETE signed in one second (the clock is pinned, so
// all three carry one X-Timestamp) all succeed, each with its own nonce.
func sameSecondUnderSchemeH(t *testing.T, p *platform, app appCreds) {
	t.Helper()
	ctx := context.Background()
	rt := &recordingTransport{}
	pinned := time.Now()
	c, err := NewClient(WithBaseURL(p.base), WithCredentials(fmt.Sprint(app.AppID), app.AppKey, app.AppSecret),
		WithHTTPClient(&http.Client{Transport: rt}), WithClock(func() time.Time { return pinned }))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := c.RegisterUser(ctx, RegisterRequest{ChannelUserID: "sdk-h-1", User: UserProfile{Name: "Han Meimei"},
		FamilyGroups:  []FamilyGroupInput{{AppGroupID: 1, Name: "Home"}},
		FamilyMembers: []FamilyMemberRegisterInput{{AppUserID: "m-1", AppGroupID: 1, Name: "Han Meimei", Relationship: "SELF"}}})
	if err != nil || len(reg.FamilyMembers) != 1 {
		t.Fatalf("scheme H register: %+v %v", reg, err)
	}
	if _, err := c.GetSnapshot(ctx, reg.OpenUserID, SnapshotQuery{}); err != nil {
		t.Fatalf("scheme H snapshot in the register's second: %v", err)
	}
	if err := c.DeleteFamilyMember(ctx, reg.OpenUserID, reg.FamilyMembers[0].MemberID); err != nil {
		t.Fatalf("scheme H bodyless DELETE in the snapshot's second: %v", err)
	}
	snap, err := c.GetSnapshot(ctx, reg.OpenUserID, SnapshotQuery{})
	if err != nil || len(snap.FamilyMembers) != 0 {
		t.Fatalf("member not deleted: %+v %v", snap, err)
	}
	ts := strconv.FormatInt(pinned.Unix(), 10)
	nonces := map[string]bool{}
	for i, r := range rt.reqs {
		h := r.Header
		if h.Get("X-App-Key") != app.AppKey || h.Get("X-Timestamp") != ts || h.Get("X-Nonce") == "" || h.Get("X-App-Id") != "" || len(h.Get("X-Signature")) != 64 {
			t.Fatalf("request %d (%s %s) not scheme H: %v", i, r.Method, r.URL.Path, h)
		}
		nonces[h.Get("X-Nonce")] = true
	}
	if len(rt.reqs) != 4 || len(nonces) != 4 {
		t.Fatalf("%d requests, %d nonces", len(rt.reqs), len(nonces))
	}
	if k := rt.reqs[2].Header.Get("Idempotency-Key"); k == "" {
		t.Fatal("the DELETE carried no Idempotency-Key")
	}
}

// schemeMByOption: WithScheme(SchemeM) still signs the spec's scheme M,
// which the platform accepts, also for a read and a bodyless DELETE in one
// second (they share a signature; the client no longer moves either).
func schemeMByOption(t *testing.T, p *platform, app appCreds) {
	t.Helper()
	ctx := context.Background()
	rt := &recordingTransport{}
	pinned := time.Now()
	c, err := NewClient(WithBaseURL(p.base), WithCredentials(fmt.Sprint(app.AppID), app.AppKey, app.AppSecret),
		WithHTTPClient(&http.Client{Transport: rt}), WithScheme(SchemeM), WithClock(func() time.Time { return pinned }))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := c.RegisterUser(ctx, RegisterRequest{ChannelUserID: "sdk-m-1", User: UserProfile{Name: "Wang Wu"},
		FamilyGroups: []FamilyGroupInput{{AppGroupID: 9, Name: "Home"}}})
	if err != nil || !reg.Created {
		t.Fatalf("scheme M register: %+v %v", reg, err)
	}
	snap, err := c.GetSnapshot(ctx, reg.OpenUserID, SnapshotQuery{})
	if err != nil || snap.User.OpenUserID != reg.OpenUserID {
		t.Fatalf("scheme M snapshot: %+v %v", snap, err)
	}
	m, err := c.UpsertFamilyMember(ctx, reg.OpenUserID, FamilyMemberUpsertInput{AppUserID: "m-m", AppGroupID: 9, Name: "Wang Xiao", Relationship: "SON"})
	if err != nil || !m.Created {
		t.Fatalf("scheme M member: %+v %v", m, err)
	}
	if _, err := c.GetSnapshot(ctx, reg.OpenUserID, SnapshotQuery{}); err != nil {
		t.Fatalf("scheme M snapshot: %v", err)
	}
	if err := c.DeleteFamilyMember(ctx, reg.OpenUserID, m.MemberID); err != nil {
		t.Fatalf("scheme M bodyless DELETE in the snapshot's second: %v", err)
	}
	ts := strconv.FormatInt(pinned.Unix(), 10)
	for i, r := range rt.reqs {
		if h := r.Header; h.Get("X-App-Id") != fmt.Sprint(app.AppID) || h.Get("X-Nonce") != "" || len(h.Get("X-Signature")) != 32 || h.Get("X-Timestamp") != ts {
			t.Fatalf("request %d (%s %s) not scheme M of one second: %v", i, r.Method, r.URL.Path, h)
		}
	}
	if n := len(rt.reqs); n != 5 || rt.reqs[3].Header.Get("X-Signature") != rt.reqs[4].Header.Get("X-Signature") {
		t.Fatalf("%d requests; the read and the DELETE should share their scheme M signature", n)
	}
}

// countingTransport counts requests and 429 answers per method.
type countingTransport struct {
	mu       sync.Mutex
	requests map[string]int
	limited  map[string]int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests[r.Method]++
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		c.limited[r.Method]++
	}
	return resp, err
}

func (c *countingTransport) snapshot() (map[string]int, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.requests), maps.Clone(c.limited)
}

// TestRateLimitRetriesAgainstThePlatform drains an app's bucket
// (60 per minute, so Retry-After is about a second): reads get 429 and are
// retried to success after Retry-After; a write without an idempotency key
// is sent once and surfaces HTTP_429 with Retry-After.
func TestRateLimitRetriesAgainstThePlatform(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	p := startPlatform(t, "PLATFORM_RATE_LIMIT=60")
	_, base := p.newApp("sdk limited", "")
	ct := &countingTransport{requests: map[string]int{}, limited: map[string]int{}}
	c, err := NewClient(WithBaseURL(p.base), WithCredentials(base.appID, base.appKey, base.appSecret),
		WithHTTPClient(&http.Client{Transport: ct}), WithAutoIdempotencyKeys(false), WithRetryPolicy(RetryPolicy{MaxRetries: 5, BaseDelay: 200 * time.Millisecond, MaxDelay: 5 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; ; i++ {
		if _, err := c.ListEvents(ctx, "", 1); err != nil {
			t.Fatalf("read %d not retried to success: %v", i, err)
		}
		if _, limited := ct.snapshot(); limited["GET"] > 0 {
			break
		}
		if i > 200 {
			t.Fatal("no 429 after 200 reads at 60/min")
		}
	}
	// The bucket is empty now (it refills one token a second): a write
	// without an idempotency key gets the typed 429 and is not repeated.
	var apiErr *APIError
	for i := 0; ; i++ {
		before, _ := ct.snapshot()
		err := c.UpdateUser(ctx, 1<<40, UserPatch{Name: "x"})
		after, _ := ct.snapshot()
		if after["PATCH"]-before["PATCH"] != 1 {
			t.Fatalf("a write without idempotency key was sent %d times", after["PATCH"]-before["PATCH"])
		}
		if errors.As(err, &apiErr) && apiErr.Status == http.StatusTooManyRequests {
			break
		}
		if i > 5 {
			t.Fatalf("no 429 on writes to an empty bucket: %v", err)
		}
	}
	if apiErr.Code != "HTTP_429" || apiErr.RetryAfter <= 0 || apiErr.RequestID == "" {
		t.Fatalf("429: %+v", apiErr)
	}
}

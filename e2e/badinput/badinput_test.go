package badinput_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/commandapi"
	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/openapi/openapitest"
	"github.com/healthtech/partner-open-platform/queryapi"
)

// This file is the systematic bad-input table: every route of the node,
// every class of bad input it can be sent (malformed JSON, a body that is
// not an object, wrong types per field, numbers beyond 2^53 and fractions,
// zero and negative quantities and ids, over-long strings, invalid UTF-8,
// duplicate keys, too deep nesting, oversized bodies, unknown fields,
// missing credentials and headers, bad path and query parameters). Each row
// asserts the documented status and code (README, "Decisions where the spec
// is silent") and that nothing was appended. A route the node serves without
// an entry in badRoutes fails TestBadInputTableCoversEveryRoute.

// authKind is how a route authenticates, which decides how a row is sent
// and which missing-header rows it gets.
type authKind int

const (
	authM        authKind = iota // scheme M partner signature
	authAdmin                    // operator bearer token
	authUploader                 // operator or uploader bearer token
	authInternal                 // internal bearer token
	authH                        // scheme H (X-App-Key, HMAC)
	authNone                     // the body carries its own proof (plugin)
	authOAuth                    // RFC 6749 client authentication, form body
	authBearer                   // OAuth bearer token plus X-App-Key
	authPublic                   // no credentials (the event catalog, like /openapi.yaml)
)

// fieldKind is a body field's JSON type.
type fieldKind int

const (
	kStr  fieldKind = iota // string; max is the longest accepted in characters (0: unchecked)
	kInt                   // integer; zero and neg are what 0 and -1 answer
	kBool                  // boolean
	kObj                   // object
	kArr                   // array of objects; max is its cap
	kStrs                  // array of strings
	kInts                  // array of integers
)

// outcome is a status and the code the body carries ("" for none; for the
// OAuth routes the RFC 6749 error).
type outcome struct {
	status int
	code   string
}

var (
	invalid      = outcome{422, "VALIDATION_ERROR"}
	noApp        = outcome{404, "APP_NOT_FOUND"}
	noItem       = outcome{404, "BENEFIT_ITEM_NOT_FOUND"}
	noOrder      = outcome{404, "ORDER_NOT_FOUND"}
	noEndpoint   = outcome{404, "WEBHOOK_ENDPOINT_NOT_FOUND"}
	unauthorized = outcome{403, "SERVICE_PROVIDER_UNAUTHORIZED"}
	notBound     = outcome{422, "USER_NOT_BOUND"}
	ok200        = outcome{200, "0"}
	ok201        = outcome{201, "0"}
)

// field is one body field; path is dotted, array elements by index
// ("items.0.quantity").
type field struct {
	path string
	kind fieldKind
	max  int
	// zero and neg are what 0 and -1 answer for an integer; nil is 422 on
	// the field. Ids that name something answer as a name of nothing does.
	zero, neg *outcome
}

// qkind is a query parameter's type.
type qkind int

const (
	qInt    qkind = iota // non-negative integer
	qLimit               // 1..max
	qTime                // ISO 8601
	qCursor              // opaque cursor
	qEnum                // one of a fixed set
	qText                // free text: invalid UTF-8 and U+0000 are refused
	qID                  // positive integer
	qDate                // Y-m-d
	qPage                // 0..max, where 0 (like absent) means the default page
	qReason              // an audit reason: at most 500 characters
)

type qparam struct {
	name string
	kind qkind
}

// badRoute describes one route for the table.
type badRoute struct {
	method, pattern string
	auth            authKind
	params          map[string]string // path parameter values that pass validation
	query           []qparam
	baseQuery       string // a query that passes validation
	// body is a body that passes validation (nil: the route takes none);
	// base is its answer, appends whether it may append.
	body     string
	optional bool    // an empty body is accepted
	body0    outcome // optional: what the request without a body answers
	fields   []field
	base     outcome
	appends  bool
	notFound outcome // what a string path parameter that names nothing answers
	// extra are rows of this route alone (bodies and outcomes that the
	// generic classes do not cover); a row without a path uses the route's.
	extra []badCase
}

func ptr(o outcome) *outcome { return &o }

// intParams are the path parameters that must be positive integers below
// 2^53 (422 VALIDATION_ERROR on the parameter otherwise).
var intParams = map[string]bool{
	"openUserId": true, "groupId": true, "memberId": true, "appId": true, "reportId": true,
	"providerId": true, "itemId": true, "recordId": true, "operatorId": true,
	"replayId":    true,
	"developerId": true,
}

// fixture holds the ids the table's bodies and paths refer to.
type fixture struct {
	app        *harness.App
	openUserID int64
	groupID    int64
	memberID   int64
	itemID     int64
	token      string // OAuth bearer token of app
}

// badRoutes is the table: one entry per route of the node.
func badRoutes(fx fixture) []badRoute {
	user := strconv.FormatInt(fx.openUserID, 10)
	appID := strconv.FormatInt(fx.app.ID, 10)
	item := strconv.FormatInt(fx.itemID, 10)
	userParams := map[string]string{"openUserId": user}
	none := map[string]string{}
	missingApp := map[string]string{"appId": "999999"}
	deliveryQuery := []qparam{{"status", qEnum}, {"event", qText}, {"from", qTime}, {"to", qTime}, {"after", qCursor}, {"limit", qLimit}, {"app_id", qID}}
	card := `{"holder_name":"韩梅梅","expires_at":"2036-01-01 00:00:00","items":[{"benefit_item_id":` + item + `,"quantity":1}]}`
	cardFields := func(prefix string) []field {
		return []field{
			{path: prefix, kind: kArr, max: 100}, {path: prefix + ".0.holder_name", kind: kStr, max: 32},
			{path: prefix + ".0.holder_phone", kind: kStr}, {path: prefix + ".0.expires_at", kind: kStr},
			{path: prefix + ".0.items", kind: kArr, max: 100},
			{path: prefix + ".0.items.0.benefit_item_id", kind: kInt, zero: ptr(noItem), neg: ptr(noItem)},
			{path: prefix + ".0.items.0.quantity", kind: kInt},
		}
	}
	return []badRoute{
		// ---- channel users (scheme M) ----
		{method: "POST", pattern: "/open/v1/channel/users", auth: authM, params: none,
			body: registerBadBody, base: ok200, fields: []field{
				{path: "channel_user_id", kind: kStr, max: 100}, {path: "user", kind: kObj},
				{path: "user.name", kind: kStr, max: 32}, {path: "user.nickname", kind: kStr, max: 32},
				{path: "user.gender", kind: kStr}, {path: "user.phone", kind: kStr},
				{path: "family_groups", kind: kArr, max: 100}, {path: "family_groups.0.app_group_id", kind: kInt},
				{path: "family_groups.0.name", kind: kStr, max: 64},
				{path: "family_members", kind: kArr, max: 100}, {path: "family_members.0.app_user_id", kind: kStr, max: 32},
				{path: "family_members.0.app_group_id", kind: kInt}, {path: "family_members.0.name", kind: kStr, max: 32},
				{path: "family_members.0.height", kind: kInt}, {path: "family_members.0.weight", kind: kInt},
				{path: "family_members.0.is_default", kind: kBool},
			},
			extra: []badCase{
				{name: "user.avatar not ASCII", body: []byte(strings.Replace(registerBadBody, `"user":{`, `"user":{"avatar":"https://example.com/头像.png",`, 1)),
					want: invalid, errKey: "user.avatar"},
				{name: "user.avatar percent-encoded", body: []byte(strings.Replace(registerBadBody, `"user":{`, `"user":{"avatar":"https://example.com/%E5%A4%B4%E5%83%8F.png",`, 1)),
					want: ok200},
			}},
		{method: "PATCH", pattern: "/open/v1/channel/users/:openUserId", auth: authM, params: userParams,
			body: `{"name":"Li Lei"}`, base: ok200, fields: []field{
				{path: "name", kind: kStr, max: 32}, {path: "nickname", kind: kStr, max: 32}, {path: "gender", kind: kStr},
				{path: "phone", kind: kStr}, {path: "email", kind: kStr}, {path: "birth_date", kind: kStr},
			},
			// avatar is a URI (format: uri): ASCII, other characters percent-encoded.
			extra: []badCase{{name: "avatar not ASCII", body: []byte(`{"avatar":"https://example.com/头像.png"}`), want: invalid, errKey: "avatar"}}},
		{method: "POST", pattern: "/open/v1/channel/users/:openUserId/family-groups", auth: authM, params: userParams,
			body: `{"app_group_id":1,"name":"Home"}`, base: ok200, fields: []field{
				{path: "app_group_id", kind: kInt}, {path: "name", kind: kStr, max: 64},
			}},
		{method: "DELETE", pattern: "/open/v1/channel/users/:openUserId/family-groups/:groupId", auth: authM,
			params: map[string]string{"openUserId": user, "groupId": "999999"}, base: outcome{404, "FAMILY_GROUP_NOT_FOUND"}},
		{method: "POST", pattern: "/open/v1/channel/users/:openUserId/family-members", auth: authM, params: userParams,
			body: `{"app_user_id":"m1","app_group_id":1,"name":"Dad","relationship":"FATHER","height":175}`, base: ok200, fields: []field{
				{path: "app_user_id", kind: kStr, max: 32}, {path: "app_group_id", kind: kInt}, {path: "name", kind: kStr, max: 32},
				{path: "relationship", kind: kStr}, {path: "height", kind: kInt}, {path: "weight", kind: kInt},
				{path: "is_default", kind: kBool}, {path: "phone", kind: kStr, max: 16},
			}},
		{method: "DELETE", pattern: "/open/v1/channel/users/:openUserId/family-members/:memberId", auth: authM,
			params: map[string]string{"openUserId": user, "memberId": "999999"}, base: outcome{404, "FAMILY_MEMBER_NOT_FOUND"}},
		{method: "GET", pattern: "/open/v1/channel/users/:openUserId", auth: authM, params: userParams,
			query: []qparam{{"channel_user_id", qText}, {"updated_after", qTime}}, base: ok200},

		// ---- apps (operator) ----
		{method: "POST", pattern: "/admin/v1/apps", auth: authAdmin, params: none,
			body: `{"name":"bad-input","scopes":["orders"]}`, base: ok201, appends: true, fields: []field{
				{path: "name", kind: kStr, max: 64}, {path: "webhook_url", kind: kStr}, {path: "webhook_events", kind: kStrs},
				{path: "environment", kind: kStr}, {path: "scopes", kind: kStrs},
			}},
		{method: "GET", pattern: "/admin/v1/apps", auth: authAdmin, params: none, base: ok200},
		{method: "GET", pattern: "/admin/v1/apps/:appId", auth: authAdmin, params: map[string]string{"appId": appID}, base: ok200},
		{method: "PATCH", pattern: "/admin/v1/apps/:appId", auth: authAdmin, params: map[string]string{"appId": appID},
			body: `{"webhook_url":null}`, base: ok200, fields: []field{
				{path: "webhook_url", kind: kStr}, {path: "webhook_events", kind: kStrs},
			}},
		{method: "POST", pattern: "/admin/v1/apps/:appId/rotate-secret", auth: authAdmin, params: missingApp, base: outcome{404, "APP_NOT_FOUND"}},
		{method: "POST", pattern: "/admin/v1/apps/:appId/suspend", auth: authAdmin, params: missingApp,
			body: `{"reason":"r"}`, optional: true, body0: noApp, base: noApp, fields: []field{{path: "reason", kind: kStr, max: 500}}},
		{method: "POST", pattern: "/admin/v1/apps/:appId/resume", auth: authAdmin, params: missingApp, base: outcome{404, "APP_NOT_FOUND"}},
		{method: "POST", pattern: "/admin/v1/apps/:appId/webhook-secret/rotate", auth: authAdmin, params: missingApp, base: outcome{404, "APP_NOT_FOUND"}},
		{method: "POST", pattern: "/admin/v1/apps/:appId/webhook-secret/activate", auth: authAdmin, params: missingApp, base: outcome{404, "APP_NOT_FOUND"}},
		{method: "POST", pattern: "/admin/v1/apps/:appId/review", auth: authAdmin, params: map[string]string{"appId": appID},
			body: `{"decision":"maybe"}`, base: invalid, fields: []field{{path: "decision", kind: kStr}, {path: "notes", kind: kStr}}},
		{method: "PUT", pattern: "/admin/v1/apps/:appId/scopes", auth: authAdmin, params: missingApp,
			body: `{"scopes":["orders"]}`, base: outcome{404, "APP_NOT_FOUND"}, fields: []field{{path: "scopes", kind: kStrs}}},
		{method: "PUT", pattern: "/admin/v1/apps/:appId/authentication", auth: authAdmin, params: missingApp,
			body: `{"require_scheme_h":true}`, base: noApp, fields: []field{{path: "require_scheme_h", kind: kBool}}},
		{method: "POST", pattern: "/open/v1/webhooks/secret/rotate", auth: authM, params: none, base: ok200, appends: true},
		{method: "POST", pattern: "/open/v1/webhooks/secret/activate", auth: authM, params: none, base: ok200, appends: true},

		// ---- operator views and log ----
		{method: "GET", pattern: "/admin/v1/history", auth: authAdmin, params: none, baseQuery: "stream=app-" + appID,
			query: []qparam{{"stream", qText}, {"from", qInt}, {"limit", qInt}, {"reason", qReason}}, base: ok200},
		{method: "GET", pattern: "/admin/v1/events", auth: authAdmin, params: none,
			query: []qparam{{"after_commit", qInt}, {"after_prepare", qInt}, {"limit", qInt}, {"reason", qReason}}, base: ok200},
		{method: "GET", pattern: "/admin/v1/projections", auth: authAdmin, params: none, base: ok200},
		{method: "GET", pattern: "/admin/v1/audit", auth: authAdmin, params: none,
			query: []qparam{{"actor", qText}, {"action", qText}, {"subject", qText}, {"from", qTime}, {"to", qTime}, {"after", qInt}, {"limit", qPage}}, base: ok200},
		{method: "GET", pattern: "/admin/v1/operators", auth: authAdmin, params: none, base: ok200},
		{method: "GET", pattern: "/admin/v1/outbox", auth: authAdmin, params: none, query: []qparam{{"status", qEnum}}, base: ok200},
		{method: "GET", pattern: "/admin/v1/developers", auth: authAdmin, params: none, query: []qparam{{"status", qEnum}}, base: ok200},
		{method: "GET", pattern: "/admin/v1/developers/:developerId", auth: authAdmin, params: map[string]string{"developerId": "999999"},
			base: outcome{404, "DEVELOPER_NOT_FOUND"}},
		{method: "POST", pattern: "/admin/v1/developers/:developerId/review", auth: authAdmin, params: map[string]string{"developerId": "999999"},
			body: `{"decision":"approve"}`, base: outcome{404, "DEVELOPER_NOT_FOUND"}, fields: []field{
				{path: "decision", kind: kStr}, {path: "notes", kind: kStr, max: 500},
			}},
		{method: "POST", pattern: "/admin/v1/operators", auth: authAdmin, params: none,
			body: `{"name":"ops","role":"nosuch"}`, base: invalid, fields: []field{{path: "name", kind: kStr, max: 64}, {path: "role", kind: kStr}}},
		{method: "POST", pattern: "/admin/v1/operators/:operatorId/revoke", auth: authAdmin, params: map[string]string{"operatorId": "999999"},
			base: outcome{404, "OPERATOR_NOT_FOUND"}},
		{method: "POST", pattern: "/admin/v1/channel-users/:openUserId/erase", auth: authAdmin, params: map[string]string{"openUserId": "999999"},
			body: `{"reason":"ticket 1"}`, base: outcome{404, "USER_NOT_FOUND"}, fields: []field{{path: "reason", kind: kStr, max: 500}}},
		{method: "POST", pattern: "/admin/v1/projections/:name/rebuild", auth: authAdmin, params: map[string]string{"name": "nosuch"},
			base: outcome{404, "PROJECTION_NOT_FOUND"}, notFound: outcome{404, "PROJECTION_NOT_FOUND"}},
		{method: "POST", pattern: "/admin/v1/keys/rotate", auth: authAdmin, params: none, base: ok200},

		// ---- webhooks ----
		{method: "GET", pattern: "/admin/v1/deliveries", auth: authAdmin, params: none, query: deliveryQuery, base: ok200},
		{method: "GET", pattern: "/admin/v1/deliveries/:deliveryId", auth: authAdmin, params: map[string]string{"deliveryId": "nosuch"},
			query: []qparam{{"reveal", qEnum}, {"reason", qText}}, base: outcome{404, "DELIVERY_NOT_FOUND"}, notFound: outcome{404, "DELIVERY_NOT_FOUND"}},
		{method: "POST", pattern: "/admin/v1/deliveries/:deliveryId/resend", auth: authAdmin, params: map[string]string{"deliveryId": "nosuch"},
			base: outcome{404, "DELIVERY_NOT_FOUND"}, notFound: outcome{404, "DELIVERY_NOT_FOUND"}},
		{method: "POST", pattern: "/admin/v1/apps/:appId/deliveries/resend", auth: authAdmin, params: missingApp,
			query: deliveryQuery[:6], base: outcome{404, "APP_NOT_FOUND"}},
		{method: "GET", pattern: "/open/v1/webhooks/deliveries", auth: authM, params: none, query: deliveryQuery[:6], base: ok200},
		{method: "GET", pattern: "/open/v1/webhooks/deliveries/:deliveryId", auth: authM, params: map[string]string{"deliveryId": "nosuch"},
			base: outcome{404, "DELIVERY_NOT_FOUND"}, notFound: outcome{404, "DELIVERY_NOT_FOUND"}},
		{method: "POST", pattern: "/open/v1/webhooks/deliveries/:deliveryId/resend", auth: authM, params: map[string]string{"deliveryId": "nosuch"},
			base: outcome{404, "DELIVERY_NOT_FOUND"}, notFound: outcome{404, "DELIVERY_NOT_FOUND"}},
		{method: "GET", pattern: "/open/v1/webhooks/events", auth: authM, params: none,
			query: []qparam{{"after", qCursor}, {"limit", qLimit}, {"wait", qInt}}, base: ok200,
			extra: []badCase{{name: "query wait=21 (beyond 20 seconds)", path: "/open/v1/webhooks/events?wait=21", want: invalid, errKey: "wait"}}},
		// Webhook replays: the fixture app has no default endpoint URL, so a
		// valid request is refused for its endpoint and appends nothing.
		{method: "POST", pattern: "/open/v1/webhooks/replays", auth: authM, params: none,
			body: replayBadBody, base: noEndpoint, fields: []field{
				{path: "endpoint_id", kind: kInt, zero: ptr(noEndpoint)}, {path: "events", kind: kStrs},
				{path: "since", kind: kStr}, {path: "cursor", kind: kStr}, {path: "until", kind: kStr},
			},
			extra: []badCase{
				{name: "unknown event type", body: []byte(`{"events":["user.nope"],"since":"2020-01-01T00:00:00Z"}`), want: invalid, errKey: "events[0]"},
				{name: "no event types", body: []byte(`{"events":[],"since":"2020-01-01T00:00:00Z"}`), want: invalid, errKey: "events"},
				{name: "since in the future", body: []byte(`{"events":["*"],"since":"2999-01-01T00:00:00Z"}`), want: invalid, errKey: "since"},
				{name: "until in the future", body: []byte(`{"events":["*"],"since":"2020-01-01T00:00:00Z","until":"2999-01-01T00:00:00Z"}`), want: invalid, errKey: "until"},
				{name: "since and cursor", body: []byte(`{"events":["*"],"since":"2020-01-01T00:00:00Z","cursor":"1-1"}`), want: invalid, errKey: "since"},
				{name: "neither since nor cursor", body: []byte(`{"events":["*"]}`), want: invalid, errKey: "since"},
				{name: "cursor not of the feed", body: []byte(`{"events":["*"],"cursor":"yesterday"}`), want: invalid, errKey: "cursor"},
				{name: "since not a time", body: []byte(`{"events":["*"],"since":"last week"}`), want: invalid, errKey: "since"},
			}},
		{method: "GET", pattern: "/open/v1/webhooks/replays/:replayId", auth: authM, params: map[string]string{"replayId": "999999"},
			base: outcome{404, "REPLAY_NOT_FOUND"}},
		{method: "POST", pattern: "/open/v1/webhooks/replays/:replayId/cancel", auth: authM, params: map[string]string{"replayId": "999999"},
			base: outcome{404, "REPLAY_NOT_FOUND"}},

		// ---- the webhook event catalog (public) ----
		{method: "GET", pattern: "/open/v1/event-types", auth: authPublic, params: none, base: ok200},
		{method: "GET", pattern: "/open/v1/event-types/:type", auth: authPublic, params: map[string]string{"type": "health.report.created"},
			base: ok200, notFound: outcome{404, "EVENT_TYPE_NOT_FOUND"},
			extra: []badCase{
				{name: "type never sent", path: "/open/v1/event-types/health.report.deleted", want: outcome{404, "EVENT_TYPE_NOT_FOUND"}},
				{name: "type in another case", path: "/open/v1/event-types/Health.Report.Created", want: outcome{404, "EVENT_TYPE_NOT_FOUND"}},
				{name: "a wildcard is not a type", path: "/open/v1/event-types/health.report.*", want: outcome{404, "EVENT_TYPE_NOT_FOUND"}},
			}},

		// ---- erasures reaching partners ----
		{method: "POST", pattern: "/open/v1/erasures/:openUserId/acknowledge", auth: authM, params: map[string]string{"openUserId": "999999"},
			base: outcome{404, "ERASURE_NOT_FOUND"}},
		{method: "GET", pattern: "/admin/v1/erasures", auth: authAdmin, params: none,
			query: []qparam{{"app_id", qInt}, {"after", qInt}, {"limit", qPage}}, base: ok200},
		{method: "GET", pattern: "/open/v1/access-log", auth: authM, params: none,
			query: []qparam{{"from", qTime}, {"to", qTime}, {"after", qInt}, {"limit", qPage}}, base: ok200},
		// ---- webhook endpoints (scheme M) ----
		{method: "GET", pattern: "/open/v1/webhooks/endpoints", auth: authM, params: none, base: ok200},
		{method: "POST", pattern: "/open/v1/webhooks/endpoints", auth: authM, params: none,
			body: `{"url":"https://10.0.0.1/hook","events":["user.*"],"enabled":true}`, base: invalid, fields: []field{
				{path: "url", kind: kStr}, {path: "events", kind: kStrs}, {path: "enabled", kind: kBool},
				{path: "description", kind: kStr, max: 256},
			},
			extra: []badCase{
				{name: "description with a line break", body: []byte(`{"url":"https://example.com/hook","description":"a\nb"}`), want: invalid, errKey: "description"},
				{name: "url missing", body: []byte(`{"events":["user.*"]}`), want: invalid, errKey: "url"},
				{name: "url of 501 characters", body: []byte(`{"url":"https://example.com/` + strings.Repeat("a", 481) + `"}`), want: invalid, errKey: "url"},
				{name: "url not https", body: []byte(`{"url":"ftp://example.com/hook"}`), want: invalid, errKey: "url"},
				{name: "url to a metadata service", body: []byte(`{"url":"https://169.254.169.254/latest"}`), want: invalid, errKey: "url"},
				{name: "events not event names", body: []byte(`{"url":"https://10.0.0.1/hook","events":["User Updated"]}`), want: invalid, errKey: "events[0]"},
				{name: "51 events", body: []byte(`{"url":"https://10.0.0.1/hook","events":[` + strings.TrimSuffix(strings.Repeat(`"user.*",`, 51), ",") + `]}`), want: invalid, errKey: "events"},
			}},
		{method: "GET", pattern: "/open/v1/webhooks/endpoints/:endpointId", auth: authM, params: map[string]string{"endpointId": "999999"},
			base: noEndpoint},
		{method: "PATCH", pattern: "/open/v1/webhooks/endpoints/:endpointId", auth: authM, params: map[string]string{"endpointId": "999999"},
			body: `{"enabled":true}`, base: noEndpoint, fields: []field{
				{path: "description", kind: kStr, max: 256},
				{path: "url", kind: kStr}, {path: "events", kind: kStrs}, {path: "enabled", kind: kBool},
			},
			extra: []badCase{
				{name: "url emptied", body: []byte(`{"url":""}`), want: invalid, errKey: "url"},
				{name: "url null", body: []byte(`{"url":null}`), want: invalid, errKey: "url"},
				{name: "url private", body: []byte(`{"url":"https://192.168.1.1/x"}`), want: invalid, errKey: "url"},
			}},
		{method: "DELETE", pattern: "/open/v1/webhooks/endpoints/:endpointId", auth: authM, params: map[string]string{"endpointId": "999999"}, base: noEndpoint},
		{method: "POST", pattern: "/open/v1/webhooks/endpoints/:endpointId/secret/rotate", auth: authM, params: map[string]string{"endpointId": "999999"}, base: noEndpoint},
		{method: "POST", pattern: "/open/v1/webhooks/endpoints/:endpointId/secret/activate", auth: authM, params: map[string]string{"endpointId": "999999"}, base: noEndpoint},
		{method: "POST", pattern: "/open/v1/webhooks/endpoints/:endpointId/test", auth: authM, params: map[string]string{"endpointId": "999999"}, base: noEndpoint},

		// ---- health reports, plugin, OAuth ----
		{method: "POST", pattern: "/admin/v1/uploaders", auth: authAdmin, params: none,
			body: `{"name":"station"}`, base: ok201, appends: true, fields: []field{{path: "name", kind: kStr, max: 64}}},
		{method: "POST", pattern: "/admin/v1/health-reports", auth: authUploader, params: none,
			body: `{"open_user_id":999999,"report_type":"BLOOD_PRESSURE","meta":{"points_code":"P1","operator_platform_user_id":7},"raw_data":{"a":1}}`, base: notBound, fields: []field{
				{path: "open_user_id", kind: kInt}, {path: "open_member_id", kind: kInt, zero: ptr(notBound), neg: ptr(notBound)},
				{path: "request_report_id", kind: kStr}, {path: "report_type", kind: kStr}, {path: "examined_at", kind: kStr},
				{path: "meta", kind: kObj}, {path: "meta.operator_platform_user_id", kind: kInt, zero: ptr(notBound), neg: ptr(notBound)}, {path: "meta.points_code", kind: kStr},
			}},
		{method: "PATCH", pattern: "/admin/v1/health-reports/:reportId", auth: authUploader, params: map[string]string{"reportId": "999999"},
			body: `{"report_type":"BLOOD_PRESSURE"}`, base: outcome{404, "REPORT_NOT_FOUND"}, fields: []field{
				{path: "report_type", kind: kStr}, {path: "file_path", kind: kStr}, {path: "interpretation_result", kind: kStr},
				{path: "interpreted_at", kind: kStr},
			}},
		{method: "GET", pattern: "/open/v1/health-reports/:openReportId", auth: authH, params: map[string]string{"openReportId": "999999"},
			base: outcome{404, ""}, notFound: outcome{404, ""}},
		{method: "GET", pattern: "/v1/health/daily-report", auth: authBearer, params: none, baseQuery: "open_user_id=" + user,
			query: []qparam{{"open_user_id", qID}, {"date", qDate}}, base: ok200},
		{method: "POST", pattern: "/plugin/v1/sessions", auth: authNone, params: none,
			body: `{"appKey":"nope","thirdUserId":"t","userProfile":"p","timestamp":"1","nonce":"n","sign":"s","deviceKey":"HOME_MULTI_BIO_MONITOR","measureMode":"BP"}`,
			base: outcome{401, "INVALID_SIGNATURE"}, fields: []field{
				{path: "appKey", kind: kStr}, {path: "thirdUserId", kind: kStr}, {path: "timestamp", kind: kStr}, {path: "sign", kind: kStr},
			}},
		{method: "POST", pattern: "/plugin/v1/sessions/:sessionId/measurements", auth: authNone, params: map[string]string{"sessionId": "nosuch"},
			body: `{"data":{"sys":120}}`, base: outcome{404, "SESSION_NOT_FOUND"}, notFound: outcome{404, "SESSION_NOT_FOUND"},
			fields: []field{{path: "device_sn", kind: kStr}},
			// device_sn is bounded in characters, not bytes.
			extra: []badCase{
				{name: "device_sn of 100 CJK characters", body: []byte(`{"device_sn":"` + strings.Repeat("设", 100) + `","data":{"sys":120}}`), want: outcome{404, "SESSION_NOT_FOUND"}},
				{name: "device_sn of 101 CJK characters", body: []byte(`{"device_sn":"` + strings.Repeat("设", 101) + `","data":{"sys":120}}`), want: invalid, errKey: "device_sn"},
			}},
		{method: "POST", pattern: "/sandbox/mock/measure", auth: authH, params: none,
			body: `{"appKey":"` + fx.app.Key + `","thirdUserId":"t-1","deviceKey":"HOME_MULTI_BIO_MONITOR","measureMode":"BP"}`,
			base: ok200, appends: true, fields: []field{
				{path: "appKey", kind: kStr}, {path: "thirdUserId", kind: kStr}, {path: "deviceKey", kind: kStr}, {path: "measureMode", kind: kStr},
			}},
		{method: "POST", pattern: "/oauth/token", auth: authOAuth, params: none, body: "grant_type=client_credentials&scope=daily_report",
			base: outcome{200, ""}, appends: true},
		{method: "POST", pattern: "/oauth/revoke", auth: authOAuth, params: none, body: "token=nosuch",
			base: outcome{200, ""}, appends: true},

		// ---- goods and orders ----
		{method: "POST", pattern: "/admin/v1/goods", auth: authAdmin, params: none,
			body: `{"goods_code":"G1","goods_name":"Scale"}`, base: outcome{409, "GOODS_CODE_EXISTS"}, fields: []field{
				{path: "goods_code", kind: kStr, max: 50}, {path: "goods_name", kind: kStr, max: 100},
			}},
		{method: "GET", pattern: "/admin/v1/goods", auth: authAdmin, params: none, base: ok200},
		{method: "PATCH", pattern: "/admin/v1/goods/:goodsCode", auth: authAdmin, params: map[string]string{"goodsCode": "NOPE"},
			body: `{"goods_name":"Scale"}`, base: outcome{404, "GOODS_NOT_FOUND"}, notFound: outcome{404, "GOODS_NOT_FOUND"}, fields: []field{
				{path: "goods_name", kind: kStr, max: 100}, {path: "active", kind: kBool},
			}},
		{method: "POST", pattern: "/admin/v1/goods/:goodsCode/deactivate", auth: authAdmin, params: map[string]string{"goodsCode": "NOPE"},
			base: outcome{404, "GOODS_NOT_FOUND"}, notFound: outcome{404, "GOODS_NOT_FOUND"}},
		{method: "POST", pattern: "/admin/v1/goods/:goodsCode/activate", auth: authAdmin, params: map[string]string{"goodsCode": "NOPE"},
			base: outcome{404, "GOODS_NOT_FOUND"}, notFound: outcome{404, "GOODS_NOT_FOUND"}},
		{method: "POST", pattern: "/open/v1/order/create", auth: authM, params: none,
			body: `{"third_order_id":"bad-1","contact_person":"李雷","contact_phone":"13812345678","address":"北京市朝阳区","area_code":"110105","items":[{"goods_code":"NOPE","quantity":1,"unit_price":100}]}`,
			base: outcome{404, "GOODS_NOT_FOUND"}, fields: []field{
				{path: "third_order_id", kind: kStr, max: 100}, {path: "contact_person", kind: kStr, max: 50},
				{path: "contact_phone", kind: kStr}, {path: "address", kind: kStr, max: 200}, {path: "user_id", kind: kInt},
				{path: "area_code", kind: kStr, max: 20}, {path: "area_text", kind: kStr, max: 100},
				{path: "logistics_type", kind: kStr}, {path: "postage_policy", kind: kStr},
				{path: "items", kind: kArr, max: 100}, {path: "items.0.goods_code", kind: kStr, max: 50},
				{path: "items.0.quantity", kind: kInt}, {path: "items.0.unit_price", kind: kInt, zero: ptr(outcome{404, "GOODS_NOT_FOUND"})},
			}},
		{method: "GET", pattern: "/open/v1/order/detail", auth: authM, params: none, baseQuery: "order_code=NOPE",
			query: []qparam{{"order_code", qText}}, base: outcome{404, "ORDER_NOT_FOUND"}},
		{method: "GET", pattern: "/admin/v1/orders", auth: authAdmin, params: none,
			query: []qparam{{"app_id", qInt}, {"status", qEnum}, {"after", qInt}, {"limit", qLimit}}, base: ok200},
		{method: "GET", pattern: "/admin/v1/orders/:orderCode", auth: authAdmin, params: map[string]string{"orderCode": "NOPE"},
			base: outcome{404, "ORDER_NOT_FOUND"}, notFound: outcome{404, "ORDER_NOT_FOUND"}},
		{method: "POST", pattern: "/admin/v1/orders/:orderCode/approve", auth: authAdmin, params: map[string]string{"orderCode": "NOPE"},
			body: `{"reason":"ok"}`, optional: true, body0: noOrder, base: noOrder, notFound: outcome{404, "ORDER_NOT_FOUND"},
			fields: []field{{path: "reason", kind: kStr}}},
		{method: "POST", pattern: "/admin/v1/orders/:orderCode/reject", auth: authAdmin, params: map[string]string{"orderCode": "NOPE"},
			body: `{"reason":"no"}`, optional: true, body0: noOrder, base: noOrder, notFound: outcome{404, "ORDER_NOT_FOUND"},
			fields: []field{{path: "reason", kind: kStr, max: 200}}},
		{method: "POST", pattern: "/admin/v1/orders/:orderCode/ship", auth: authAdmin, params: map[string]string{"orderCode": "NOPE"},
			body: shipBadBody, base: outcome{404, "ORDER_NOT_FOUND"}, notFound: outcome{404, "ORDER_NOT_FOUND"}, fields: shipFields},
		{method: "POST", pattern: "/open/internal/order/shipped-callback", auth: authInternal, params: none,
			body: `{"order_code":"NOPE",` + shipBadBody[1:], base: outcome{404, "ORDER_NOT_FOUND"},
			fields: append([]field{{path: "order_code", kind: kStr}}, shipFields...)},
		{method: "POST", pattern: "/open/v1/order/shipped-callback-test", auth: authM, params: none,
			body: `{"order_code":"NOPE"}`, base: outcome{404, "ORDER_NOT_FOUND"}, fields: []field{{path: "order_code", kind: kStr}}},
		{method: "POST", pattern: "/open/v1/webhooks/sandbox-events", auth: authM, params: none,
			body: `{"event":"no.such.event"}`, base: invalid, fields: []field{{path: "event", kind: kStr}}},

		// ---- benefits ----
		{method: "POST", pattern: "/admin/v1/service-providers", auth: authAdmin, params: none,
			body: `{"app_id":999999,"name":"Station","type":"HEALTH_STATION","contact":"010-1"}`, base: outcome{404, "APP_NOT_FOUND"},
			fields: []field{
				{path: "app_id", kind: kInt, zero: ptr(noApp), neg: ptr(noApp)}, {path: "name", kind: kStr},
				{path: "type", kind: kStr}, {path: "contact", kind: kStr}, {path: "points_code", kind: kStr},
			}},
		{method: "GET", pattern: "/admin/v1/service-providers", auth: authAdmin, params: none, query: []qparam{{"app_id", qInt}, {"reveal", qEnum}, {"reason", qText}}, base: ok200},
		{method: "POST", pattern: "/open/v1/service-providers", auth: authM, params: none,
			body: `{"name":"Own station","type":"HEALTH_STATION","contact":"010-2","points_code":"P-9"}`, base: ok201, appends: true,
			fields: []field{
				{path: "name", kind: kStr, max: 100}, {path: "type", kind: kStr}, {path: "contact", kind: kStr, max: 100},
				{path: "points_code", kind: kStr, max: 64},
			}},
		{method: "POST", pattern: "/admin/v1/service-providers/:providerId/review", auth: authAdmin, params: map[string]string{"providerId": "999999"},
			body: `{"decision":"approve"}`, base: outcome{404, "PROVIDER_NOT_FOUND"}, fields: []field{
				{path: "decision", kind: kStr}, {path: "notes", kind: kStr},
			}},
		{method: "PUT", pattern: "/admin/v1/service-providers/:providerId/benefit-items", auth: authAdmin, params: map[string]string{"providerId": "999999"},
			body: `{"allowed_benefit_item_ids":[` + item + `]}`, base: outcome{404, "PROVIDER_NOT_FOUND"},
			fields: []field{{path: "allowed_benefit_item_ids", kind: kInts}}},
		{method: "POST", pattern: "/admin/v1/benefit-items", auth: authAdmin, params: none,
			body: `{"name":"Dental"}`, base: ok201, appends: true, fields: []field{{path: "name", kind: kStr, max: 64}}},
		{method: "GET", pattern: "/admin/v1/benefit-items", auth: authAdmin, params: none, base: ok200},
		{method: "POST", pattern: "/admin/v1/benefit-items/:itemId/suspend", auth: authAdmin, params: map[string]string{"itemId": "999999"},
			base: outcome{404, "BENEFIT_ITEM_NOT_FOUND"}},
		{method: "POST", pattern: "/admin/v1/benefit-items/:itemId/activate", auth: authAdmin, params: map[string]string{"itemId": "999999"},
			base: outcome{404, "BENEFIT_ITEM_NOT_FOUND"}},
		{method: "POST", pattern: "/admin/v1/benefit-cards", auth: authAdmin, params: none,
			body: `{"issuer_app_id":` + appID + `,"cards":[` + card + `]}`, base: ok201, appends: true,
			fields: append([]field{{path: "issuer_app_id", kind: kInt, zero: ptr(noApp), neg: ptr(noApp)}, {path: "batch_id", kind: kStr}}, cardFields("cards")...)},
		{method: "GET", pattern: "/admin/v1/benefit-cards/:cardNumber", auth: authAdmin, params: map[string]string{"cardNumber": "NOPE"},
			base: outcome{404, "CARD_NOT_FOUND"}, notFound: outcome{404, "CARD_NOT_FOUND"}},
		{method: "POST", pattern: "/open/v1/benefit-cards/batch-issue", auth: authM, params: none,
			body: `{"batch_id":"b-1","cards":[` + card + `]}`, base: ok201, appends: true,
			fields: append([]field{{path: "batch_id", kind: kStr, max: 64}}, cardFields("cards")...)},
		{method: "GET", pattern: "/open/v1/benefit-cards/detail", auth: authM, params: none, baseQuery: "card_number=NOPE",
			query: []qparam{{"card_number", qText}}, base: outcome{404, "CARD_NOT_FOUND"}},
		{method: "POST", pattern: "/open/v1/benefit-cards/verify-use", auth: authM, params: none,
			body: `{"card_number":"ABCDEFGHIJKLMNO","benefit_item_id":` + item + `}`, base: outcome{403, "SERVICE_PROVIDER_UNAUTHORIZED"},
			fields: []field{
				{path: "card_number", kind: kStr}, {path: "user_benefit_item_id", kind: kInt},
				{path: "benefit_item_id", kind: kInt, zero: ptr(unauthorized), neg: ptr(unauthorized)},
				{path: "quantity", kind: kInt}, {path: "points_code", kind: kStr, max: 64},
				{path: "service_provider_id", kind: kInt, zero: ptr(unauthorized), neg: ptr(unauthorized)},
				{path: "remark", kind: kStr, max: 200},
			}},
		{method: "GET", pattern: "/open/v1/benefit-cards/fulfillments", auth: authM, params: none,
			query: []qparam{{"after", qInt}, {"limit", qLimit}, {"role", qEnum}}, base: ok200},
		{method: "POST", pattern: "/open/v1/benefit-cards/fulfillments/:recordId/rating", auth: authM, params: map[string]string{"recordId": "999999"},
			body: `{"rating":5}`, base: outcome{404, "FULFILLMENT_NOT_FOUND"}, fields: []field{{path: "rating", kind: kInt}}},
	}
}

// registerBadBody is the fixture's register, sent again: a pure replay.
// replayBadBody is a replay request that passes validation.
const replayBadBody = `{"events":["user.profile.updated"],"since":"2020-01-01T00:00:00Z"}`

const registerBadBody = `{"channel_user_id":"bad-1","user":{"name":"Li Lei","phone":"13812345678"},` +
	`"family_groups":[{"app_group_id":1,"name":"Home"}],` +
	`"family_members":[{"app_user_id":"m1","app_group_id":1,"name":"Dad","relationship":"FATHER","height":175}]}`

const shipBadBody = `{"logistics_company":"SF","tracking_number":"T1","items":[{"item_id":1,"device_sns":["SN1"]}]}`

var shipFields = []field{
	{path: "logistics_company", kind: kStr, max: 50}, {path: "tracking_number", kind: kStr, max: 64},
	{path: "items", kind: kArr, max: 100}, {path: "items.0.item_id", kind: kInt, zero: ptr(noOrder), neg: ptr(noOrder)},
	{path: "items.0.device_sns", kind: kStrs},
}

// handlerRouteKeys lists "METHOD pattern" of every route the node's APIs serve.
func handlerRouteKeys() []string {
	var keys []string
	routes := append((&commandapi.API{}).Routes(), (&queryapi.API{}).Routes()...)
	for _, r := range append(routes, (&queryapi.ReportAPI{}).Routes()...) {
		keys = append(keys, r.Method+" "+r.Path)
	}
	sort.Strings(keys)
	return keys
}

// TestBadInputTableCoversEveryRoute fails when a route is added without a
// row in the bad-input table (or a row names a route that is gone).
func TestBadInputTableCoversEveryRoute(t *testing.T) {
	t.Parallel()
	have := map[string]bool{}
	for _, r := range badRoutes(fixture{app: &harness.App{}}) {
		k := r.method + " " + r.pattern
		if have[k] {
			t.Errorf("bad-input table: %s twice", k)
		}
		have[k] = true
	}
	for _, k := range handlerRouteKeys() {
		if !have[k] {
			t.Errorf("bad-input table: route %s has no entry in badRoutes", k)
		}
		delete(have, k)
	}
	for k := range have {
		t.Errorf("bad-input table: %s is not a route of the node", k)
	}
}

// badCase is one request of the table and what it must answer.
type badCase struct {
	name    string
	path    string // with query
	body    []byte
	headers map[string]string // set after signing; "" deletes
	want    outcome
	errKey  string // VALIDATION_ERROR: this key must be among errors
	appends bool
}

// errPath turns a dotted field path into the errors key ("items.0.q" → "items[0].q").
func errPath(path string) string {
	var b strings.Builder
	for i, seg := range strings.Split(path, ".") {
		if _, err := strconv.Atoi(seg); err == nil {
			b.WriteString("[" + seg + "]")
			continue
		}
		if i > 0 {
			b.WriteString(".")
		}
		b.WriteString(seg)
	}
	return b.String()
}

// mibString is a JSON string of 1 MiB, quoted once for every route's
// "body beyond 1 MiB" case: quoting it rune by rune under -race costs
// close to a CPU-second each time.
var mibString = strconv.Quote(strings.Repeat("a", 1<<20))

// beyondMiB is body with mibString at the new key zz. setPath places a
// short stand-in there, swapped for mibString afterwards: encoding/json
// compacts a raw value byte by byte, close to a CPU-second per route
// under -race for 1 MiB.
func beyondMiB(t *testing.T, body string) []byte {
	t.Helper()
	const standIn = `"mib-stand-in"`
	b := setPath(t, body, "zz", standIn)
	at := []byte(`"zz":` + standIn)
	if bytes.Count(b, at) != 1 {
		t.Fatalf("table body %s: the stand-in is not in %s exactly once", body, b)
	}
	return bytes.Replace(b, at, []byte(`"zz":`+mibString), 1)
}

// setPath returns body with the value at path replaced by raw JSON.
func setPath(t *testing.T, body string, path string, raw string) []byte {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		t.Fatalf("table body %s: %v", body, err)
	}
	segs := strings.Split(path, ".")
	cur := root
	for i, seg := range segs {
		last := i == len(segs)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[seg] = json.RawMessage(raw)
			} else {
				if c[seg] == nil {
					t.Fatalf("table body %s has no %s", body, path)
				}
				cur = c[seg]
			}
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n >= len(c) {
				t.Fatalf("table body %s has no %s", body, path)
			}
			if last {
				c[n] = json.RawMessage(raw)
			} else {
				cur = c[n]
			}
		default:
			t.Fatalf("table body %s: %s is not a container", body, path)
		}
	}
	out, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// valueAt returns the JSON of the value at path.
func valueAt(t *testing.T, body, path string) string {
	t.Helper()
	var root any
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		t.Fatal(err)
	}
	cur := root
	for _, seg := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[seg]
		case []any:
			n, _ := strconv.Atoi(seg)
			cur = c[n]
		}
	}
	raw, _ := json.Marshal(cur)
	return string(raw)
}

var paramRE = regexp.MustCompile(`:[A-Za-z]+`)

// fill puts the route's parameter values (or the override) into its pattern.
func fill(r badRoute, override map[string]string) string {
	return paramRE.ReplaceAllStringFunc(r.pattern, func(m string) string {
		name := m[1:]
		if v, ok := override[name]; ok {
			return v
		}
		return url.PathEscape(r.params[name])
	})
}

func withQuery(path, q string) string {
	if q == "" {
		return path
	}
	return path + "?" + q
}

// cases expands one route into its rows.
func (r badRoute) cases(t *testing.T) []badCase {
	path := fill(r, nil)
	base := withQuery(path, r.baseQuery)
	var out []badCase
	add := func(c badCase) {
		if c.path == "" {
			c.path = base
		}
		out = append(out, c)
	}
	isJSON := r.body != "" && r.auth != authOAuth

	// Credentials and required headers.
	switch r.auth {
	case authM:
		for _, h := range []string{"X-App-Id", "X-Timestamp", "X-Signature"} {
			add(badCase{name: "missing " + h, body: []byte(r.body), headers: map[string]string{h: ""}, want: outcome{401, "HTTP_401"}})
		}
		add(badCase{name: "app id not a number", body: []byte(r.body), headers: map[string]string{"X-App-Id": "1x"}, want: outcome{401, "HTTP_401"}})
		add(badCase{name: "timestamp in milliseconds", body: []byte(r.body), headers: map[string]string{"X-Timestamp": strconv.FormatInt(time.Now().UnixMilli(), 10)}, want: outcome{401, "HTTP_401"}})
		if r.method != "GET" {
			add(badCase{name: "Idempotency-Key too long", body: []byte(r.body), headers: map[string]string{"Idempotency-Key": strings.Repeat("k", 256)},
				want: invalid, errKey: "Idempotency-Key"})
			add(badCase{name: "Idempotency-Key not printable ASCII", body: []byte(r.body), headers: map[string]string{"Idempotency-Key": "ключ"},
				want: invalid, errKey: "Idempotency-Key"})
		}
	case authAdmin, authUploader, authInternal:
		add(badCase{name: "missing Authorization", body: []byte(r.body), headers: map[string]string{"Authorization": ""}, want: outcome{401, "HTTP_401"}})
		add(badCase{name: "wrong token", body: []byte(r.body), headers: map[string]string{"Authorization": "Bearer wrong"}, want: outcome{401, "HTTP_401"}})
		add(badCase{name: "not a bearer", body: []byte(r.body), headers: map[string]string{"Authorization": "Basic d3Jvbmc6d3Jvbmc="}, want: outcome{401, "HTTP_401"}})
	case authH:
		add(badCase{name: "missing X-App-Key", body: []byte(r.body), headers: map[string]string{"X-App-Key": ""}, want: outcome{401, "MISSING_APP_KEY"}})
		add(badCase{name: "missing X-Signature", body: []byte(r.body), headers: map[string]string{"X-Signature": ""}, want: outcome{401, "INVALID_SIGNATURE"}})
		add(badCase{name: "missing X-Timestamp", body: []byte(r.body), headers: map[string]string{"X-Timestamp": ""}, want: outcome{401, "INVALID_SIGNATURE"}})
	case authOAuth:
		add(badCase{name: "no client credentials", body: []byte(r.body), headers: map[string]string{"Authorization": ""}, want: outcome{401, "invalid_client"}})
		add(badCase{name: "wrong secret", body: []byte(r.body), headers: map[string]string{"Authorization": "Basic d3Jvbmc6d3Jvbmc="}, want: outcome{401, "invalid_client"}})
	case authBearer:
		add(badCase{name: "missing Authorization", headers: map[string]string{"Authorization": ""}, want: outcome{401, "MISSING_TOKEN"}})
		add(badCase{name: "missing X-App-Key", headers: map[string]string{"X-App-Key": ""}, want: outcome{401, "INVALID_TOKEN"}})
		add(badCase{name: "wrong token", headers: map[string]string{"Authorization": "Bearer wrong"}, want: outcome{401, "INVALID_TOKEN"}})
	}

	// Path parameters.
	for _, m := range paramRE.FindAllString(r.pattern, -1) {
		name := m[1:]
		switch {
		case intParams[name]:
			for _, v := range []string{"abc", "0", "-1", "1.5", "1e3", "9007199254740992", "99999999999999999999", "%20"} {
				add(badCase{name: name + "=" + v, path: withQuery(fill(r, map[string]string{name: v}), r.baseQuery), body: []byte(r.body),
					want: invalid, errKey: name})
			}
		case name == "endpointId":
			// 0 is the default endpoint: a non-negative integer below 2^53.
			for _, v := range []string{"abc", "-1", "1.5", "1e3", "9007199254740992", "99999999999999999999", "%20"} {
				add(badCase{name: name + "=" + v, path: withQuery(fill(r, map[string]string{name: v}), r.baseQuery), body: []byte(r.body),
					want: invalid, errKey: name})
			}
		case name == "openReportId":
			for _, v := range []string{"abc", "0", "-1", "1.5", "99999999999999999999"} {
				add(badCase{name: name + "=" + v, path: fill(r, map[string]string{name: v}), want: outcome{404, ""}})
			}
		default:
			// Text that is not valid UTF-8 or holds U+0000 is refused as
			// in a body; other text that names nothing is not found.
			for _, v := range []string{"%FF", "%00", "a%00b", "%ED%A0%80", "%C0%AF"} {
				add(badCase{name: name + "=" + v, path: withQuery(fill(r, map[string]string{name: v}), r.baseQuery), body: []byte(r.body),
					want: invalid, errKey: name})
			}
			for _, v := range []string{strings.Repeat("x", 2000), "%F0%9D%84%9E", "..", "~"} {
				add(badCase{name: name + "=" + shorten(v), path: withQuery(fill(r, map[string]string{name: v}), r.baseQuery), body: []byte(r.body),
					want: r.notFound})
			}
		}
	}

	// Query parameters.
	for _, q := range r.query {
		var bad []string
		switch q.kind {
		case qInt:
			bad = []string{"abc", "-1", "1.5", "99999999999999999999"}
		case qID:
			bad = []string{"abc", "0", "-1", "1.5", "99999999999999999999"}
		case qLimit:
			bad = []string{"abc", "0", "-1", "1.5", "100000"}
		case qTime:
			bad = []string{"yesterday", "2026-13-45T00:00:00Z", "%FF"}
		case qCursor:
			bad = []string{"x", "1", "-1-2", "%FF"}
		case qEnum:
			bad = []string{"bogus", "%FF"}
		case qDate:
			bad = []string{"2026-02-30", "20260101", "%00"}
		case qText:
			bad = []string{"%FF", "%00", "a%00b", "%ED%A0%80", "%C0%AF"}
		case qPage:
			bad = []string{"abc", "-1", "1.5", "100000"}
			add(badCase{name: "query " + q.name + "=0 is the default page", path: withQuery(path, strings.TrimPrefix(r.baseQuery+"&"+q.name+"=0", "&")),
				body: []byte(r.body), want: r.base, appends: r.appends})
		case qReason:
			// Bounded whether or not it goes with a reveal.
			bad = []string{strings.Repeat("a", 501), strings.Repeat("%E7%90%86", 501)}
			add(badCase{name: "query " + q.name + " of 500 characters", path: withQuery(path, strings.TrimPrefix(r.baseQuery+"&"+q.name+"="+strings.Repeat("%E7%90%86", 500), "&")),
				body: []byte(r.body), want: r.base, appends: r.appends})
		}
		// One rule for every query parameter: an empty value is the
		// parameter omitted (stated in the document's description).
		if !strings.Contains("&"+r.baseQuery, "&"+q.name+"=") {
			add(badCase{name: "query " + q.name + "= is absent", path: withQuery(path, strings.TrimPrefix(r.baseQuery+"&"+q.name+"=", "&")),
				body: []byte(r.body), want: r.base, appends: r.appends})
		}
		for _, v := range bad {
			query := r.baseQuery
			if strings.Contains("&"+query, "&"+q.name+"=") {
				query = regexp.MustCompile(`(^|&)`+q.name+`=[^&]*`).ReplaceAllString(query, "${1}"+q.name+"="+v)
			} else if query == "" {
				query = q.name + "=" + v
			} else {
				query += "&" + q.name + "=" + v
			}
			add(badCase{name: "query " + q.name + "=" + v, path: withQuery(path, query), body: []byte(r.body), want: invalid, errKey: q.name})
		}
	}

	for _, c := range r.extra {
		add(c)
	}

	// The base request with unknown fields or parameters: ignored, so it
	// answers as the base request does.
	switch {
	case isJSON:
		add(badCase{name: "unknown fields ignored", body: setPath(t, r.body, "zz_unknown", `{"nested":[1,"x",null],"id":-1}`), want: r.base, appends: r.appends})
	case r.auth == authOAuth:
		add(badCase{name: "unknown form fields ignored", body: []byte(r.body + "&zz_unknown=1"), want: r.base, appends: r.appends})
	default:
		add(badCase{name: "unknown query parameters ignored", path: withQuery(path, strings.TrimPrefix(r.baseQuery+"&zz_unknown=1", "&")), want: r.base, appends: r.appends})
	}

	if r.auth == authOAuth {
		add(badCase{name: "form not urlencoded", body: []byte("%zz=%"), want: outcome{400, "invalid_request"}})
		add(badCase{name: "form too large", body: []byte("token=" + strings.Repeat("a", 1<<20)), want: outcome{400, "invalid_request"}})
		return out
	}
	if !isJSON {
		return out
	}

	// Whole-body classes.
	malformed := []string{`{"a":`, `{"a":1}}`, `{"a":1} {"b":2}`, `{'a':1}`, `{"a":01}`, `{"a":1,}`, `[]`, `[{"a":1}]`, `"text"`, `42`, `null`, `true`}
	if r.optional {
		// No body, or only white space, is no body.
		add(badCase{name: "no body", body: nil, want: r.body0})
		add(badCase{name: "white space only", body: []byte(" \n\t"), want: r.body0})
	} else {
		malformed = append(malformed, "", " \n\t")
	}
	for _, b := range malformed {
		add(badCase{name: "malformed " + strconv.Quote(b), body: []byte(b), want: outcome{400, "HTTP_400"}})
	}
	add(badCase{name: "invalid UTF-8", body: append(append([]byte(r.body[:len(r.body)-1]), []byte(",\"zz\":\"\xff\xfe\"")...), '}'), want: invalid, errKey: "body"})
	add(badCase{name: "invalid UTF-8 in a key", body: append(append([]byte(r.body[:len(r.body)-1]), []byte(",\"z\xc0\":1")...), '}'), want: invalid, errKey: "body"})
	first := firstKey(t, r.body)
	add(badCase{name: "duplicate key " + first, body: []byte(`{"` + first + `":` + valueAt(t, r.body, first) + `,` + r.body[1:]), want: invalid, errKey: first})
	add(badCase{name: "duplicate key in an unknown field", body: setPath(t, r.body, "zz", `{"a":1,"a":2}`), want: invalid, errKey: "zz.a"})
	// An unknown field is ignored, but its arrays are capped like known ones.
	long := "[" + strings.TrimSuffix(strings.Repeat(`1,`, 1001), ",") + "]"
	add(badCase{name: "unknown field with more than 1000 elements", body: setPath(t, r.body, "zz", long), want: invalid, errKey: "zz"})
	add(badCase{name: "array of more than 1000 elements in an unknown field", body: setPath(t, r.body, "zz", `{"a":[`+long+`]}`), want: invalid, errKey: "zz.a[0]"})
	deep := strings.Repeat("[", 64) + strings.Repeat("]", 64)
	add(badCase{name: "nesting beyond 64 levels", body: setPath(t, r.body, "zz", deep), want: invalid})
	add(badCase{name: "body beyond 1 MiB", body: beyondMiB(t, r.body), want: outcome{413, "PAYLOAD_TOO_LARGE"}})

	// Field classes.
	for _, f := range r.fields {
		key := errPath(f.path)
		set := func(name, raw string, want outcome) {
			c := badCase{name: f.path + " " + name, body: setPath(t, r.body, f.path, raw), want: want}
			if want == invalid {
				c.errKey = key
			}
			add(c)
		}
		switch f.kind {
		case kStr:
			set("as number", `123`, invalid)
			set("as object", `{}`, invalid)
			set("as array", `["x"]`, invalid)
			set("with U+0000", `"a\u0000b"`, invalid)
			set("with a lone surrogate", `"a\ud800b"`, invalid)
			if f.max > 0 {
				set(fmt.Sprintf("longer than %d", f.max), strconv.Quote(strings.Repeat("𝄞", f.max+1)), invalid)
			}
		case kInt:
			set("as string", `"1"`, invalid)
			set("as bool", `true`, invalid)
			set("fractional", `1.5`, invalid)
			set("beyond 2^53", `9007199254740993`, invalid)
			set("beyond 2^63", `99999999999999999999`, invalid)
			set("beyond float64", `1e400`, invalid)
			set("negative beyond 2^53", `-9007199254740993`, invalid)
			zero, neg := invalid, invalid
			if f.zero != nil {
				zero = *f.zero
			}
			if f.neg != nil {
				neg = *f.neg
			}
			set("zero", `0`, zero)
			set("negative", `-1`, neg)
		case kBool:
			set("as string", `"true"`, invalid)
			set("as number", `1`, invalid)
		case kObj:
			set("as number", `1`, invalid)
			set("as array", `[]`, invalid)
			set("as string", `"{}"`, invalid)
		case kArr:
			set("as object", `{}`, invalid)
			set("as string", `"[]"`, invalid)
			elem := valueAt(t, r.body, f.path+".0")
			add(badCase{name: f.path + " with a number element", body: setPath(t, r.body, f.path, `[1]`), want: invalid, errKey: key + "[0]"})
			set(fmt.Sprintf("with more than %d elements", f.max), "["+strings.TrimSuffix(strings.Repeat(elem+",", f.max+1), ",")+"]", invalid)
		case kStrs:
			set("as string", `"orders"`, invalid)
			add(badCase{name: f.path + " with a number element", body: setPath(t, r.body, f.path, `[1]`), want: invalid, errKey: key})
			set("with more than 1000 elements", "["+strings.TrimSuffix(strings.Repeat(`"x",`, 1001), ",")+"]", invalid)
		case kInts:
			set("as string", `"1"`, invalid)
			for _, e := range []string{`"1"`, `1.5`, `9007199254740993`, `-9007199254740993`, `1e400`, `null`} {
				add(badCase{name: f.path + " with element " + e, body: setPath(t, r.body, f.path, "["+e+"]"), want: invalid, errKey: key + "[0]"})
			}
			set("with a zero element", `[0]`, invalid)
			set("with a negative element", `[-1]`, invalid)
			set("with more than 1000 elements", "["+strings.TrimSuffix(strings.Repeat(`1,`, 1001), ",")+"]", invalid)
		}
	}
	return out
}

func shorten(s string) string {
	if len(s) > 20 {
		return s[:10] + "…(" + strconv.Itoa(len(s)) + ")"
	}
	return s
}

func firstKey(t *testing.T, body string) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	tok, err := dec.Token()
	if err != nil {
		t.Fatal(err)
	}
	return tok.(string)
}

// freshAddresses is a validating client whose every request comes from a
// new loopback address, so the table's many refused signatures never meet
// the per-address failure throttle (which answers 429 before anything else).
func freshAddresses(t *testing.T) *http.Client {
	var n atomic.Uint32
	base := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		i := n.Add(1)
		ip := net.IPv4(127, 42, byte(i>>8), byte(i))
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}}
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(base.CloseIdleConnections)
	return &http.Client{Transport: openapitest.NewTransport(t, base), Timeout: 30 * time.Second}
}

// badFixture prepares what the table's bodies and paths refer to: a
// registered user with a group and a member, goods G1, a benefit item, the
// app an approved channel partner, and a daily-report token.
func badFixture(t *testing.T, p *harness.Platform) fixture {
	a := p.CreateApp("bad-input")
	fx := fixture{app: a}
	var reg struct {
		OpenUserID int64 `json:"open_user_id"`
		Groups     []struct {
			ID int64 `json:"family_group_id"`
		} `json:"family_groups"`
		Members []struct {
			ID int64 `json:"member_id"`
		} `json:"family_members"`
	}
	a.Expect("POST", "/open/v1/channel/users", []byte(registerBadBody), 201, "0").Data(t, &reg)
	fx.openUserID, fx.groupID, fx.memberID = reg.OpenUserID, reg.Groups[0].ID, reg.Members[0].ID
	p.AdminOK("POST", "/admin/v1/goods", map[string]any{"goods_code": "G1", "goods_name": "Scale"}, 201)
	var it struct {
		ID int64 `json:"benefit_item_id"`
	}
	p.AdminOK("POST", "/admin/v1/benefit-items", map[string]any{"name": "Check-up"}, 201).Data(t, &it)
	fx.itemID = it.ID
	var cp struct {
		ID int64 `json:"provider_id"`
	}
	p.AdminOK("POST", "/admin/v1/service-providers", map[string]any{"app_id": a.ID, "name": "Insurer", "type": "CHANNEL_PARTNER", "contact": "x"}, 201).Data(t, &cp)
	p.AdminOK("POST", fmt.Sprintf("/admin/v1/service-providers/%d/review", cp.ID), map[string]any{"decision": "approve"}, 200)
	status, tok := p.OAuth("/oauth/token", url.Values{"grant_type": {"client_credentials"}, "scope": {"daily_report"}}, a.Key, a.Secret)
	if status != 200 {
		t.Fatalf("oauth token: %d %v", status, tok)
	}
	fx.token, _ = tok["access_token"].(string)
	return fx
}

// sendBad sends one row the way its route authenticates.
func sendBad(p *harness.Platform, r badRoute, fx fixture, c badCase) harness.Response {
	p.T.Helper()
	a := fx.app
	var req *http.Request
	switch r.auth {
	case authM:
		req = a.Request(r.method, c.path, c.body, time.Now())
	case authH:
		req = a.RequestH(r.method, c.path, c.body, harness.FreshNonce(), time.Now())
	default:
		var err error
		req, err = http.NewRequest(r.method, p.Srv.URL+c.path, bytes.NewReader(c.body))
		if err != nil {
			p.T.Fatal(err)
		}
		switch r.auth {
		case authAdmin, authUploader:
			req.Header.Set("Authorization", "Bearer "+p.Node.AdminToken)
		case authInternal:
			req.Header.Set("Authorization", "Bearer "+p.Node.InternalToken)
		case authOAuth:
			req.SetBasicAuth(a.Key, a.Secret)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		case authBearer:
			req.Header.Set("Authorization", "Bearer "+fx.token)
			req.Header.Set("X-App-Key", a.Key)
		}
		if r.auth != authOAuth {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	for k, v := range c.headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return p.Send(req)
}

// codeOf is the code a row compares: the envelope's, or RFC 6749's error.
func codeOf(r badRoute, res harness.Response) string {
	if r.auth == authOAuth {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(res.Raw, &e)
		return e.Error
	}
	if res.Env.Code == nil {
		return ""
	}
	return res.Code()
}

// TestBadInput sends every row of the table to a node on each read-model
// store: each answers its documented status and code, and a refused request
// appends nothing.
// badInputShards splits the table over this many nodes per read-model
// store: one node's rows run one after another (each counts the events
// around itself), and the table is the package's longest work, so shards
// keep it from being the tail of a parallel run.
const badInputShards = 3

// TestBadInput is not parallel at the top level on purpose: it runs while
// the other tests wait, its shards filling the parallel slots first, so the
// package's longest work starts first instead of last.
func TestBadInput(t *testing.T) {
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		for shard := range badInputShards {
			t.Run(fmt.Sprintf("shard-%d", shard), func(t *testing.T) {
				t.Parallel()
				cfg := cfg
				cfg.DataDir = t.TempDir()
				if cfg.PostgresURL != "" {
					cfg.PostgresURL = harness.NodeDB(t) // a node of its own, not a cluster
				}
				badInputShard(t, cfg, shard)
			})
		}
	})
}

// badInputShard sends every row of the shard-th of badInputShards
// contiguous runs of the table (rows that prepare a later row, such as a
// webhook-secret rotation before its activation, stay together) to a node
// of its own.
func badInputShard(t *testing.T, cfg node.Config, shard int) {
	p := harness.Start(t, cfg)
	p.Client = freshAddresses(t)
	fx := badFixture(t, p)
	rows, routes := 0, 0
	table := badRoutes(fx)
	for i, r := range table {
		if i*badInputShards/len(table) != shard {
			continue
		}
		routes++
		t.Run(r.method+" "+r.pattern, func(t *testing.T) {
			p.T = t
			defer func() { p.T = nil }()
			for _, c := range r.cases(t) {
				before := p.EventCount()
				res := sendBad(p, r, fx, c)
				rows++
				got := outcome{res.Status, codeOf(r, res)}
				if got != c.want {
					t.Errorf("%s: got %d %q, want %d %q; body %.300s", c.name, got.status, got.code, c.want.status, c.want.code, res.Raw)
					continue
				}
				if c.errKey != "" {
					if _, ok := res.Env.Errors[c.errKey]; !ok {
						t.Errorf("%s: errors %v lack %q", c.name, res.Env.Errors, c.errKey)
					}
				}
				if !c.appends {
					if after := p.EventCount(); after != before {
						t.Errorf("%s: answered %d but appended %d events", c.name, res.Status, after-before)
					}
				}
			}
		})
	}
	p.T = t
	t.Logf("%d rows over %d routes", rows, routes)
}

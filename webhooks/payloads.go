package webhooks

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// deliveryNamespace makes delivery ids a pure function of (app, source
// event): the same event seen twice yields the same id.
var deliveryNamespace = uuid.MustParse("6f1c2a52-9d7e-4c0b-8a53-3f0d8d2b7e41")

// DeliveryID derives the stable delivery id of one source event for one
// app's default endpoint.
func DeliveryID(appID int64, sourceEventID string) string {
	return uuid.NewSHA1(deliveryNamespace, []byte(strconv.FormatInt(appID, 10)+"/"+sourceEventID)).String()
}

// EndpointDeliveryID derives the stable delivery id of one source event for
// one endpoint of an app; the default endpoint's is DeliveryID, so the
// deliveries made before apps had several endpoints keep their ids.
func EndpointDeliveryID(appID, endpointID int64, sourceEventID string) string {
	if endpointID == domain.DefaultEndpointID {
		return DeliveryID(appID, sourceEventID)
	}
	return uuid.NewSHA1(deliveryNamespace, []byte(strconv.FormatInt(appID, 10)+"/"+strconv.FormatInt(endpointID, 10)+"/"+sourceEventID)).String()
}

// userEvent is the body of every channel-user webhook. The spec does not
// show one; this shape is documented in the README and the OpenAPI file.
type userEvent struct {
	Event         string `json:"event"`
	DeliveryID    string `json:"delivery_id"`
	AppID         int64  `json:"app_id"`
	OpenUserID    int64  `json:"open_user_id"`
	ChannelUserID string `json:"channel_user_id"`
	OccurredAt    string `json:"occurred_at"`
	Data          any    `json:"data"`
}

type groupData struct {
	FamilyGroupID    int64   `json:"family_group_id"`
	AppGroupID       int64   `json:"app_group_id"`
	Name             string  `json:"name,omitempty"`
	Created          *bool   `json:"created,omitempty"`
	DeletedMemberIDs []int64 `json:"deleted_member_ids,omitempty"`
}

type memberData struct {
	MemberID      int64    `json:"member_id"`
	AppUserID     string   `json:"app_user_id"`
	FamilyGroupID int64    `json:"family_group_id"`
	AppGroupID    int64    `json:"app_group_id,omitempty"`
	ChangedFields []string `json:"changed_fields,omitempty"`
}

// Rendered is a partner-visible event ready to become a delivery.
type Rendered struct {
	Event      string
	AppID      int64
	Body       []byte
	DeadLetter bool
	// Only is set for an event meant for one endpoint (a test event):
	// Endpoint names it, and no other endpoint gets a delivery.
	Only     bool
	Endpoint int64
}

// Render returns the webhook body of a partner-visible event for the app's
// default endpoint, or ok=false for events partners do not receive
// (internal bookkeeping, registrations).
func Render(env events.Envelope, loc *time.Location) (Rendered, bool) {
	return RenderFor(env, loc, domain.DefaultEndpointID)
}

// RenderFor is Render for one endpoint of the app: the same body but for
// the delivery id (EndpointDeliveryID), which the body repeats.
func RenderFor(env events.Envelope, loc *time.Location, endpointID int64) (Rendered, bool) {
	appID := env.Metadata.AppID
	if appID <= 0 {
		return Rendered{}, false
	}
	id := EndpointDeliveryID(appID, endpointID, env.ID)
	at := env.Metadata.OccurredAt.In(loc).Format(time.RFC3339)
	user := func(event string, openUserID int64, channelUserID string, data any) (Rendered, bool) {
		body, err := json.Marshal(userEvent{Event: event, DeliveryID: id, AppID: appID, OpenUserID: openUserID, ChannelUserID: channelUserID, OccurredAt: at, Data: data})
		if err != nil {
			return Rendered{}, false
		}
		return Rendered{Event: event, AppID: appID, Body: body}, true
	}
	switch p := env.Payload.(type) {
	case *catalog.UserProfileUpdated:
		return user(p.EventType(), p.OpenUserID, p.ChannelUserID, map[string]any{"changed_fields": p.Changed})
	case *catalog.FamilyGroupUpserted:
		created := p.Created
		return user(p.EventType(), p.OpenUserID, p.ChannelUserID, groupData{FamilyGroupID: p.FamilyGroupID, AppGroupID: p.AppGroupID, Name: p.Name, Created: &created})
	case *catalog.FamilyGroupDissolved:
		ids := p.DeletedMemberIDs
		if ids == nil {
			ids = []int64{}
		}
		return user(p.EventType(), p.OpenUserID, p.ChannelUserID, map[string]any{"family_group_id": p.FamilyGroupID, "app_group_id": p.AppGroupID, "deleted_member_ids": ids})
	case *catalog.FamilyMemberCreated:
		return user(p.EventType(), p.OpenUserID, p.ChannelUserID, memberData{MemberID: p.Member.MemberID, AppUserID: p.Member.AppUserID, FamilyGroupID: p.Member.FamilyGroupID, AppGroupID: p.Member.AppGroupID})
	case *catalog.FamilyMemberUpdated:
		return user(p.EventType(), p.OpenUserID, p.ChannelUserID, memberData{MemberID: p.Member.MemberID, AppUserID: p.Member.AppUserID, FamilyGroupID: p.Member.FamilyGroupID, AppGroupID: p.Member.AppGroupID, ChangedFields: p.Changed})
	case *catalog.FamilyMemberDeleted:
		return user(p.EventType(), p.OpenUserID, p.ChannelUserID, memberData{MemberID: p.MemberID, AppUserID: p.AppUserID, FamilyGroupID: p.FamilyGroupID})
	case *catalog.ReportCreated:
		return report("health.report.created", id, appID, p.OpenUserID, p.ChannelUserID, p.ReportID, p.ReportType, at)
	case *catalog.ReportUpdated:
		return report("health.report.updated", id, appID, p.OpenUserID, p.ChannelUserID, p.ReportID, p.ReportType, at)
	case *catalog.PluginMeasurementRecorded:
		if p.NeedsAnalysis {
			return Rendered{}, false // plugin.report.ready waits for the algorithm step
		}
		return pluginReady(id, p.PluginMeasurement, at)
	case *catalog.PluginMeasurementAnalyzed:
		return pluginReady(id, p.PluginMeasurement, at)
	case *catalog.OrderShipped:
		body, err := json.Marshal(orderShipped{
			Event: "order.shipped", DeliveryID: id, AppID: appID, OrderCode: p.OrderCode, ThirdOrderID: p.ThirdOrderID,
			LogisticsCompany: p.LogisticsCompany, TrackingNumber: p.TrackingNumber, ShippedAt: p.ShippedAt.In(loc).Format(time.RFC3339),
			Complete: p.Complete, Items: p.Items, OccurredAt: at,
		})
		if err != nil {
			return Rendered{}, false
		}
		return Rendered{Event: "order.shipped", AppID: appID, Body: body}, true
	case *catalog.AppWebhookTestRequested:
		// A test goes to the endpoint it names, whichever is asked for.
		id = EndpointDeliveryID(appID, p.EndpointID, env.ID)
		body, err := json.Marshal(testEvent{Event: domain.TestEvent, DeliveryID: id, AppID: appID, EndpointID: p.EndpointID, OccurredAt: at,
			Data: testData{Message: "This is a test webhook: the platform can reach this endpoint and signs with its secret."}})
		if err != nil {
			return Rendered{}, false
		}
		return Rendered{Event: domain.TestEvent, AppID: appID, Body: body, Only: true, Endpoint: p.EndpointID}, true
	}
	return Rendered{}, false
}

// testEvent is the body of webhook.test, documented in the OpenAPI file.
type testEvent struct {
	Event      string   `json:"event"`
	DeliveryID string   `json:"delivery_id"`
	AppID      int64    `json:"app_id"`
	EndpointID int64    `json:"endpoint_id"`
	OccurredAt string   `json:"occurred_at"`
	Data       testData `json:"data"`
}

type testData struct {
	Message string `json:"message"`
}

// reportEvent is exactly the spec's health.report.* body.
type reportEvent struct {
	Event         string  `json:"event"`
	OpenUserID    int64   `json:"open_user_id"`
	ChannelUserID string  `json:"channel_user_id"`
	OpenReportID  int64   `json:"open_report_id"`
	ReportType    *string `json:"report_type"`
	OccurredAt    string  `json:"occurred_at"`
	DeliveryID    string  `json:"delivery_id"`
}

func report(event, id string, appID, openUserID int64, channelUserID string, reportID int64, reportType *string, at string) (Rendered, bool) {
	body, err := json.Marshal(reportEvent{Event: event, OpenUserID: openUserID, ChannelUserID: channelUserID, OpenReportID: reportID, ReportType: reportType, OccurredAt: at, DeliveryID: id})
	if err != nil {
		return Rendered{}, false
	}
	return Rendered{Event: event, AppID: appID, Body: body}, true
}

// pluginEvent is exactly the spec's plugin.report.ready body.
type pluginEvent struct {
	Event          string  `json:"event"`
	DeliveryID     string  `json:"delivery_id"`
	AppID          int64   `json:"app_id"`
	MeasurementNo  string  `json:"measurement_no"`
	ThirdUserID    *string `json:"third_user_id"`
	PlatformUserID *int64  `json:"platform_user_id"`
	ReportType     string  `json:"report_type"`
	ReportURL      *string `json:"report_url"`
	Metadata       *string `json:"metadata"`
	OccurredAt     string  `json:"occurred_at"`
}

func pluginReady(id string, m catalog.PluginMeasurement, at string) (Rendered, bool) {
	body, err := json.Marshal(pluginEvent{
		Event: "plugin.report.ready", DeliveryID: id, AppID: m.AppID, MeasurementNo: m.MeasurementNo, ThirdUserID: m.ThirdUserID,
		PlatformUserID: m.PlatformUserID, ReportType: m.ReportType, Metadata: m.Metadata, OccurredAt: at,
	})
	if err != nil {
		return Rendered{}, false
	}
	return Rendered{Event: "plugin.report.ready", AppID: m.AppID, Body: body, DeadLetter: true}, true
}

// Subscribed reports whether an app's subscription takes an event: exact
// names, prefix wildcards such as health.report.*, or no selection for all.
func Subscribed(subscription []string, event string) bool {
	if len(subscription) == 0 {
		return true
	}
	for _, s := range subscription {
		if s == event || s == "*" {
			return true
		}
		if prefix, ok := cutWildcard(s); ok && len(event) > len(prefix) && event[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}

// cutWildcard turns "health.report.*" into "health.report.".
func cutWildcard(s string) (string, bool) {
	if len(s) >= 2 && s[len(s)-2:] == ".*" {
		return s[:len(s)-1], true
	}
	return "", false
}

// orderShipped is the shipment notification; the spec does not show one,
// this shape is documented in the README and the OpenAPI file.
type orderShipped struct {
	Event            string                `json:"event"`
	DeliveryID       string                `json:"delivery_id"`
	AppID            int64                 `json:"app_id"`
	OrderCode        string                `json:"order_code"`
	ThirdOrderID     string                `json:"third_order_id"`
	LogisticsCompany string                `json:"logistics_company"`
	TrackingNumber   string                `json:"tracking_number"`
	ShippedAt        string                `json:"shipped_at"`
	Complete         bool                  `json:"complete"`
	Items            []catalog.ShippedLine `json:"items"`
	OccurredAt       string                `json:"occurred_at"`
}

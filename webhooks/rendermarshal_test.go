package webhooks

// This file keeps the webhook bodies as json.Marshal rendered them before
// render.go wrote them directly: the reference the equality tests compare
// the direct writers with, byte for byte.

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/eventtypes"
)

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

// renderForMarshal is RenderFor as it was, with json.Marshal.
func renderForMarshal(env events.Envelope, loc *time.Location, endpointID int64) (Rendered, bool) {
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
		return reportMarshal("health.report.created", id, appID, p.OpenUserID, p.ChannelUserID, p.ReportID, p.ReportType, at)
	case *catalog.ReportUpdated:
		return reportMarshal("health.report.updated", id, appID, p.OpenUserID, p.ChannelUserID, p.ReportID, p.ReportType, at)
	case *catalog.PluginMeasurementRecorded:
		if p.NeedsAnalysis {
			return Rendered{}, false // plugin.report.ready waits for the algorithm step
		}
		return pluginReadyMarshal(id, p.PluginMeasurement, at)
	case *catalog.PluginMeasurementAnalyzed:
		return pluginReadyMarshal(id, p.PluginMeasurement, at)
	case *catalog.OrderShipped:
		body, err := json.Marshal(orderShippedJSON{
			Event: "order.shipped", DeliveryID: id, AppID: appID, OrderCode: p.OrderCode, ThirdOrderID: p.ThirdOrderID,
			LogisticsCompany: p.LogisticsCompany, TrackingNumber: p.TrackingNumber, ShippedAt: p.ShippedAt.In(loc).Format(time.RFC3339),
			Complete: p.Complete, Items: p.Items, OccurredAt: at,
		})
		if err != nil {
			return Rendered{}, false
		}
		return Rendered{Event: "order.shipped", AppID: appID, Body: body}, true
	case *catalog.UserErased:
		erasedAt := at
		if !p.ErasedAt.IsZero() {
			erasedAt = p.ErasedAt.In(loc).Format(time.RFC3339)
		}
		body, err := json.Marshal(userErasedEvent{Event: "user.erased", DeliveryID: id, AppID: appID, OpenUserID: p.OpenUserID, OccurredAt: at,
			Data: userErasedData{ErasedAt: erasedAt, AcknowledgePath: fmt.Sprintf("/open/v1/erasures/%d/acknowledge", p.OpenUserID)}})
		if err != nil {
			return Rendered{}, false
		}
		return Rendered{Event: "user.erased", AppID: appID, Body: body}, true
	case *catalog.AppSandboxEventTriggered:
		sample, ok := eventtypes.SandboxSample(p.Event, appID, env.Metadata.OccurredAt)
		if !ok {
			return Rendered{}, false
		}
		env.Payload = sample
		return renderForMarshal(env, loc, endpointID)
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

// userErasedEvent is the body of user.erased, documented in the OpenAPI
// file: ids the app already has, no personal field.
type userErasedEvent struct {
	Event      string         `json:"event"`
	DeliveryID string         `json:"delivery_id"`
	AppID      int64          `json:"app_id"`
	OpenUserID int64          `json:"open_user_id"`
	OccurredAt string         `json:"occurred_at"`
	Data       userErasedData `json:"data"`
}

type userErasedData struct {
	ErasedAt        string `json:"erased_at"`
	AcknowledgePath string `json:"acknowledge_path"`
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

func reportMarshal(event, id string, appID, openUserID int64, channelUserID string, reportID int64, reportType *string, at string) (Rendered, bool) {
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

func pluginReadyMarshal(id string, m catalog.PluginMeasurement, at string) (Rendered, bool) {
	body, err := json.Marshal(pluginEvent{
		Event: "plugin.report.ready", DeliveryID: id, AppID: m.AppID, MeasurementNo: m.MeasurementNo, ThirdUserID: m.ThirdUserID,
		PlatformUserID: m.PlatformUserID, ReportType: m.ReportType, Metadata: m.Metadata, OccurredAt: at,
	})
	if err != nil {
		return Rendered{}, false
	}
	return Rendered{Event: "plugin.report.ready", AppID: m.AppID, Body: body, DeadLetter: true}, true
}

// orderShippedJSON is the shipment notification; the spec does not show one,
// this shape is documented in the README and the OpenAPI file.
type orderShippedJSON struct {
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

package webhooks

import (
	"bytes"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	jc "github.com/healthtech/partner-open-platform/events/jsoncodec"
	"github.com/healthtech/partner-open-platform/internal/eventtypes"
)

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
	// deliveryID is the id the body repeats, when it is the delivery's
	// (see id), so the plan does not derive it a second time.
	deliveryID string
}

// id is the id of the delivery of r to endpointID, of source event
// sourceID: EndpointDeliveryID of r's app. A body renders the id of the
// event's app (its metadata); a plugin measurement naming another app
// leaves deliveryID empty and its delivery keeps the id it always had.
func (r Rendered) id(endpointID int64, sourceID string) string {
	if r.deliveryID != "" {
		return r.deliveryID
	}
	return EndpointDeliveryID(r.AppID, endpointID, sourceID)
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
	switch p := env.Payload.(type) {
	case *catalog.UserProfileUpdated:
		b := userBody(p.EventType(), id, appID, p.OpenUserID, p.ChannelUserID, at)
		b = html.Strings(b, `{"changed_fields":`, p.Changed)
		return rendered(p.EventType(), appID, id, append(b, "}}"...)), true
	case *catalog.FamilyGroupUpserted:
		b := userBody(p.EventType(), id, appID, p.OpenUserID, p.ChannelUserID, at)
		b = jc.Int(b, `{"family_group_id":`, p.FamilyGroupID)
		b = jc.Int(b, `,"app_group_id":`, p.AppGroupID)
		if p.Name != "" {
			b = html.String(b, `,"name":`, p.Name)
		}
		b = jc.Bool(b, `,"created":`, p.Created)
		return rendered(p.EventType(), appID, id, append(b, "}}"...)), true
	case *catalog.FamilyGroupDissolved:
		// The keys in encoding/json's order for the map it rendered: sorted.
		b := userBody(p.EventType(), id, appID, p.OpenUserID, p.ChannelUserID, at)
		b = jc.Int(b, `{"app_group_id":`, p.AppGroupID)
		b = jc.Ints(b, `,"deleted_member_ids":`, p.DeletedMemberIDs)
		b = jc.Int(b, `,"family_group_id":`, p.FamilyGroupID)
		return rendered(p.EventType(), appID, id, append(b, "}}"...)), true
	case *catalog.FamilyMemberCreated:
		b := userBody(p.EventType(), id, appID, p.OpenUserID, p.ChannelUserID, at)
		b = appendMember(b, p.Member.MemberID, p.Member.AppUserID, p.Member.FamilyGroupID, p.Member.AppGroupID, nil)
		return rendered(p.EventType(), appID, id, b), true
	case *catalog.FamilyMemberUpdated:
		b := userBody(p.EventType(), id, appID, p.OpenUserID, p.ChannelUserID, at)
		b = appendMember(b, p.Member.MemberID, p.Member.AppUserID, p.Member.FamilyGroupID, p.Member.AppGroupID, p.Changed)
		return rendered(p.EventType(), appID, id, b), true
	case *catalog.FamilyMemberDeleted:
		b := userBody(p.EventType(), id, appID, p.OpenUserID, p.ChannelUserID, at)
		b = appendMember(b, p.MemberID, p.AppUserID, p.FamilyGroupID, 0, nil)
		return rendered(p.EventType(), appID, id, b), true
	case *catalog.ReportCreated:
		return report("health.report.created", id, appID, p.OpenUserID, p.ChannelUserID, p.ReportID, p.ReportType, at), true
	case *catalog.ReportUpdated:
		return report("health.report.updated", id, appID, p.OpenUserID, p.ChannelUserID, p.ReportID, p.ReportType, at), true
	case *catalog.PluginMeasurementRecorded:
		if p.NeedsAnalysis {
			return Rendered{}, false // plugin.report.ready waits for the algorithm step
		}
		return pluginReady(id, appID, p.PluginMeasurement, at), true
	case *catalog.PluginMeasurementAnalyzed:
		return pluginReady(id, appID, p.PluginMeasurement, at), true
	case *catalog.OrderShipped:
		return orderShipped(id, appID, p, p.ShippedAt.In(loc).Format(time.RFC3339), at), true
	case *catalog.UserErased:
		return userErased(id, appID, p, loc, at), true
	case *catalog.AppWebhookTestRequested:
		// A test goes to the endpoint it names, whichever is asked for.
		id = EndpointDeliveryID(appID, p.EndpointID, env.ID)
		b := html.String(make([]byte, 0, 256), `{"event":`, domain.TestEvent)
		b = html.String(b, `,"delivery_id":`, id)
		b = jc.Int(b, `,"app_id":`, appID)
		b = jc.Int(b, `,"endpoint_id":`, p.EndpointID)
		b = html.String(b, `,"occurred_at":`, at)
		b = html.String(b, `,"data":{"message":`, "This is a test webhook: the platform can reach this endpoint and signs with its secret.")
		r := rendered(domain.TestEvent, appID, id, append(b, "}}"...))
		r.Only, r.Endpoint = true, p.EndpointID
		return r, true
	case *catalog.AppSandboxEventTriggered:
		// The sample renders through the real event's case: same shape,
		// same delivery id derivation, same fan-out to endpoints.
		sample, ok := eventtypes.SandboxSample(p.Event, appID, env.Metadata.OccurredAt)
		if !ok {
			return Rendered{}, false
		}
		env.Payload = sample
		return RenderFor(env, loc, endpointID)
	}
	return Rendered{}, false
}

// forEndpoint is RenderFor(env, loc, endpointID) made from r, env's
// rendering for the app's default endpoint: the two bodies differ only in
// the delivery id they repeat, so a fan-out copies the body once per
// endpoint with its id put in, instead of rendering the event again. A
// body whose id is not r's own, or not found exactly once where the body
// writes it, is rendered again.
func forEndpoint(r Rendered, env events.Envelope, loc *time.Location, endpointID int64) (Rendered, bool) {
	if r.deliveryID == "" || r.Only || !plainID(r.deliveryID) {
		return RenderFor(env, loc, endpointID)
	}
	at := bytes.Index(r.Body, []byte(`,"delivery_id":"`+r.deliveryID+`"`))
	if at < 0 || bytes.LastIndex(r.Body, []byte(r.deliveryID)) != at+len(`,"delivery_id":"`) {
		return RenderFor(env, loc, endpointID)
	}
	id := EndpointDeliveryID(r.AppID, endpointID, env.ID)
	if !plainID(id) {
		return RenderFor(env, loc, endpointID)
	}
	at += len(`,"delivery_id":"`)
	body := make([]byte, 0, len(r.Body)-len(r.deliveryID)+len(id))
	body = append(append(append(body, r.Body[:at]...), id...), r.Body[at+len(r.deliveryID):]...)
	out := r
	out.Body, out.deliveryID = body, id
	return out, true
}

// plainID says whether id is written into a body as it is (a UUID's hex
// digits and hyphens need no escaping).
func plainID(id string) bool {
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || c == '-') {
			return false
		}
	}
	return id != ""
}

// The webhook bodies are written field by field, in the order and with the
// escaping json.Marshal gave them (every delivery's body is signed, so a
// partner sees the same bytes as before): reflection over a struct and a
// map per body was most of a delivery's rendering. render_test.go keeps the
// structs json.Marshal rendered, documented in the README and the OpenAPI
// file, and requires equal bytes for every type (TestRenderMatchesEncodingJSON,
// FuzzRenderMatchesEncodingJSON).

// rendered is a body of event ready to become a delivery with id.
func rendered(event string, appID int64, id string, body []byte) Rendered {
	return Rendered{Event: event, AppID: appID, Body: body, deliveryID: id}
}

// userBody starts the body of every channel-user webhook, up to its data
// object: event, delivery_id, app_id, open_user_id, channel_user_id,
// occurred_at, data.
func userBody(event, id string, appID, openUserID int64, channelUserID, at string) []byte {
	b := make([]byte, 0, 320+len(channelUserID))
	b = html.String(b, `{"event":`, event)
	b = html.String(b, `,"delivery_id":`, id)
	b = jc.Int(b, `,"app_id":`, appID)
	b = jc.Int(b, `,"open_user_id":`, openUserID)
	b = html.String(b, `,"channel_user_id":`, channelUserID)
	b = html.String(b, `,"occurred_at":`, at)
	return append(b, `,"data":`...)
}

// appendMember writes a family member's data object and closes the body:
// app_group_id is left out when 0 and changed_fields when empty.
func appendMember(b []byte, memberID int64, appUserID string, familyGroupID, appGroupID int64, changed []string) []byte {
	b = jc.Int(b, `{"member_id":`, memberID)
	b = html.String(b, `,"app_user_id":`, appUserID)
	b = jc.Int(b, `,"family_group_id":`, familyGroupID)
	if appGroupID != 0 {
		b = jc.Int(b, `,"app_group_id":`, appGroupID)
	}
	if len(changed) > 0 {
		b = html.Strings(b, `,"changed_fields":`, changed)
	}
	return append(b, "}}"...)
}

// report is exactly the spec's health.report.* body.
func report(event, id string, appID, openUserID int64, channelUserID string, reportID int64, reportType *string, at string) Rendered {
	b := html.String(make([]byte, 0, 256+len(channelUserID)), `{"event":`, event)
	b = jc.Int(b, `,"open_user_id":`, openUserID)
	b = html.String(b, `,"channel_user_id":`, channelUserID)
	b = jc.Int(b, `,"open_report_id":`, reportID)
	b = html.OptString(b, `,"report_type":`, reportType)
	b = html.String(b, `,"occurred_at":`, at)
	b = html.String(b, `,"delivery_id":`, id)
	return rendered(event, appID, id, append(b, '}'))
}

// pluginReady is exactly the spec's plugin.report.ready body; report_url
// is always null. id is the delivery id of the event's app (appID), which
// the rendered delivery goes to only when the measurement names that app.
func pluginReady(id string, appID int64, m catalog.PluginMeasurement, at string) Rendered {
	b := html.String(make([]byte, 0, 320), `{"event":`, "plugin.report.ready")
	b = html.String(b, `,"delivery_id":`, id)
	b = jc.Int(b, `,"app_id":`, m.AppID)
	b = html.String(b, `,"measurement_no":`, m.MeasurementNo)
	b = html.OptString(b, `,"third_user_id":`, m.ThirdUserID)
	b = jc.OptInt(b, `,"platform_user_id":`, m.PlatformUserID)
	b = html.String(b, `,"report_type":`, m.ReportType)
	b = append(b, `,"report_url":null`...)
	b = html.OptString(b, `,"metadata":`, m.Metadata)
	b = html.String(b, `,"occurred_at":`, at)
	r := rendered("plugin.report.ready", m.AppID, id, append(b, '}'))
	r.DeadLetter = true
	if m.AppID != appID {
		r.deliveryID = ""
	}
	return r
}

// orderShipped is the shipment notification; the spec does not show one,
// this shape is documented in the README and the OpenAPI file.
func orderShipped(id string, appID int64, p *catalog.OrderShipped, shippedAt, at string) Rendered {
	b := html.String(make([]byte, 0, 384+64*len(p.Items)), `{"event":`, "order.shipped")
	b = html.String(b, `,"delivery_id":`, id)
	b = jc.Int(b, `,"app_id":`, appID)
	b = html.String(b, `,"order_code":`, p.OrderCode)
	b = html.String(b, `,"third_order_id":`, p.ThirdOrderID)
	b = html.String(b, `,"logistics_company":`, p.LogisticsCompany)
	b = html.String(b, `,"tracking_number":`, p.TrackingNumber)
	b = html.String(b, `,"shipped_at":`, shippedAt)
	b = jc.Bool(b, `,"complete":`, p.Complete)
	b = append(b, `,"items":`...)
	if p.Items == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, it := range p.Items {
			if i > 0 {
				b = append(b, ',')
			}
			b = jc.Int(b, `{"item_id":`, it.ItemID)
			b = html.String(b, `,"goods_code":`, it.GoodsCode)
			b = jc.Int(b, `,"quantity":`, it.Quantity)
			b = html.Strings(b, `,"device_sns":`, it.DeviceSNs)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = html.String(b, `,"occurred_at":`, at)
	return rendered("order.shipped", appID, id, append(b, '}'))
}

// userErased tells the app that held a person that the platform erased
// them (GDPR Art. 19). It names the person by the open_user_id the app
// already has and reads no personal field of the event: the person's key
// is destroyed, so whatever such a field held is gone (an old event's
// channel_user_id included), and the body, sealed under the delivery's
// own key (privacy.Subject), stays readable for retries and resends.
func userErased(id string, appID int64, p *catalog.UserErased, loc *time.Location, at string) Rendered {
	erasedAt := at
	if !p.ErasedAt.IsZero() {
		erasedAt = p.ErasedAt.In(loc).Format(time.RFC3339)
	}
	b := html.String(make([]byte, 0, 320), `{"event":`, p.EventType())
	b = html.String(b, `,"delivery_id":`, id)
	b = jc.Int(b, `,"app_id":`, appID)
	b = jc.Int(b, `,"open_user_id":`, p.OpenUserID)
	b = html.String(b, `,"occurred_at":`, at)
	b = html.String(b, `,"data":{"erased_at":`, erasedAt)
	b = html.String(b, `,"acknowledge_path":`, domain.ErasureAcknowledgePath(p.OpenUserID))
	return rendered(p.EventType(), appID, id, append(b, "}}"...))
}

// html writes strings as json.Marshal does, HTML characters escaped.
var html = jc.HTML

package webhooks

import (
	"crypto/sha1"
	"encoding/hex"
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
	return nameUUID(appID, domain.DefaultEndpointID, sourceEventID)
}

// EndpointDeliveryID derives the stable delivery id of one source event for
// one endpoint of an app; the default endpoint's is DeliveryID, so the
// deliveries made before apps had several endpoints keep their ids.
func EndpointDeliveryID(appID, endpointID int64, sourceEventID string) string {
	return nameUUID(appID, endpointID, sourceEventID)
}

// nameUUID is uuid.NewSHA1(deliveryNamespace, name).String() of the name
// "app/source" (default endpoint) or "app/endpoint/source", computed on the
// stack: every delivery derives one or two, and the uuid package's hash and
// string each allocated (TestDeliveryIDsAreUUIDv5 compares the two).
func nameUUID(appID, endpointID int64, sourceEventID string) string {
	var buf [128]byte
	b := append(buf[:0], deliveryNamespace[:]...)
	b = append(strconv.AppendInt(b, appID, 10), '/')
	if endpointID != domain.DefaultEndpointID {
		b = append(strconv.AppendInt(b, endpointID, 10), '/')
	}
	sum := sha1.Sum(append(b, sourceEventID...))
	sum[6] = sum[6]&0x0f | 0x50 // version 5
	sum[8] = sum[8]&0x3f | 0x80 // RFC 4122 variant
	var out [36]byte
	hex.Encode(out[0:8], sum[0:4])
	hex.Encode(out[9:13], sum[4:6])
	hex.Encode(out[14:18], sum[6:8])
	hex.Encode(out[19:23], sum[8:10])
	hex.Encode(out[24:36], sum[10:16])
	out[8], out[13], out[18], out[23] = '-', '-', '-', '-'
	return string(out[:])
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
		b = events.AppendJSONStrings(append(b, `{"changed_fields":`...), p.Changed, true)
		return rendered(p.EventType(), appID, id, append(b, "}}"...)), true
	case *catalog.FamilyGroupUpserted:
		b := userBody(p.EventType(), id, appID, p.OpenUserID, p.ChannelUserID, at)
		b = appendInt(b, `{"family_group_id":`, p.FamilyGroupID)
		b = appendInt(b, `,"app_group_id":`, p.AppGroupID)
		if p.Name != "" {
			b = appendString(b, `,"name":`, p.Name)
		}
		b = strconv.AppendBool(append(b, `,"created":`...), p.Created)
		return rendered(p.EventType(), appID, id, append(b, "}}"...)), true
	case *catalog.FamilyGroupDissolved:
		// The keys in encoding/json's order for the map it rendered: sorted.
		b := userBody(p.EventType(), id, appID, p.OpenUserID, p.ChannelUserID, at)
		b = appendInt(b, `{"app_group_id":`, p.AppGroupID)
		b = append(b, `,"deleted_member_ids":[`...)
		for i, m := range p.DeletedMemberIDs {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, m, 10)
		}
		b = appendInt(append(b, ']'), `,"family_group_id":`, p.FamilyGroupID)
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
	case *catalog.AppWebhookTestRequested:
		// A test goes to the endpoint it names, whichever is asked for.
		id = EndpointDeliveryID(appID, p.EndpointID, env.ID)
		b := appendString(make([]byte, 0, 256), `{"event":`, domain.TestEvent)
		b = appendString(b, `,"delivery_id":`, id)
		b = appendInt(b, `,"app_id":`, appID)
		b = appendInt(b, `,"endpoint_id":`, p.EndpointID)
		b = appendString(b, `,"occurred_at":`, at)
		b = appendString(b, `,"data":{"message":`, "This is a test webhook: the platform can reach this endpoint and signs with its secret.")
		r := rendered(domain.TestEvent, appID, id, append(b, "}}"...))
		r.Only, r.Endpoint = true, p.EndpointID
		return r, true
	}
	return Rendered{}, false
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

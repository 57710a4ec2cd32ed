package eventtypes

import (
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// table is the catalog: one entry per webhook event type, in the order
// the list shows them. Adding a type is one entry here (its body's fields,
// a sample event the renderer turns into the example, and the sandbox
// sample a trigger of the type sends), then
// `go test ./internal/eventtypes -update` writes its schema and example
// files and the SDKs' type lists; see docs/event-catalog.md.
var table = []entry{
	{
		name: "user.profile.updated", title: "User profile changed",
		description: "A PATCH of the user changed at least one field.",
		versions: []version{{
			body: channelUser(
				prop("changed_fields", nullable(arrayOf(str("name of a changed profile field")))),
			),
			sample: &catalog.UserProfileUpdated{ChannelUserID: "u-1", OpenUserID: 1001, Changed: []string{"name", "nickname", "phone"}},
		}},
		sandbox: func(int64, time.Time) events.Payload {
			return &catalog.UserProfileUpdated{ChannelUserID: sandboxChannelUser, OpenUserID: sandboxOpenUser, Changed: []string{"name", "nickname"}}
		},
	},
	{
		name: "user.family_group.created", title: "Family group created or renamed",
		description: "A group was created (by register or the group upsert, `created=true`) or an existing group was renamed by the upsert (`created=false`).",
		versions: []version{{
			body: channelUser(
				prop("family_group_id", integer("the platform's id of the group")),
				prop("app_group_id", integer("the partner's id of the group")),
				optional("name", str("the group's name; left out when empty")),
				prop("created", boolean("true when the group is new, false when an existing group was renamed")),
			),
			sample: &catalog.FamilyGroupUpserted{ChannelUserID: "u-1", OpenUserID: 1001, FamilyGroupID: 2001, AppGroupID: 12, Name: "Home", Created: true},
		}},
		sandbox: func(int64, time.Time) events.Payload {
			return &catalog.FamilyGroupUpserted{ChannelUserID: sandboxChannelUser, OpenUserID: sandboxOpenUser, FamilyGroupID: sandboxID, AppGroupID: 1, Name: "Sandbox family", Created: true}
		},
	},
	{
		name: "user.family_group.deleted", title: "Family group dissolved",
		description: "A group was dissolved; the members deleted with it are in `deleted_member_ids`.",
		versions: []version{{
			body: channelUser(
				prop("app_group_id", integer("the partner's id of the group")),
				prop("deleted_member_ids", arrayOf(integer("a member deleted with the group"))),
				prop("family_group_id", integer("the platform's id of the group")),
			),
			sample: &catalog.FamilyGroupDissolved{ChannelUserID: "u-1", OpenUserID: 1001, FamilyGroupID: 2001, AppGroupID: 12, DeletedMemberIDs: []int64{3001, 3002}},
		}},
		sandbox: func(int64, time.Time) events.Payload {
			return &catalog.FamilyGroupDissolved{ChannelUserID: sandboxChannelUser, OpenUserID: sandboxOpenUser, FamilyGroupID: sandboxID, AppGroupID: 1, DeletedMemberIDs: []int64{sandboxID}}
		},
	},
	{
		name: "user.family_member.created", title: "Family member created",
		description: "A member was created by register or the member upsert.",
		versions: []version{{
			body:   channelUser(memberFields(false)...),
			sample: &catalog.FamilyMemberCreated{ChannelUserID: "u-1", OpenUserID: 1001, Member: sampleMember},
		}},
		sandbox: func(int64, time.Time) events.Payload {
			return &catalog.FamilyMemberCreated{ChannelUserID: sandboxChannelUser, OpenUserID: sandboxOpenUser, Member: sandboxMember}
		},
	},
	{
		name: "user.family_member.updated", title: "Family member updated",
		description: "A member upsert changed at least one field, or another member was marked default and this one lost the flag.",
		versions: []version{{
			body:   channelUser(memberFields(true)...),
			sample: &catalog.FamilyMemberUpdated{ChannelUserID: "u-1", OpenUserID: 1001, Member: sampleMember, Changed: []string{"name", "is_default"}},
		}},
		sandbox: func(int64, time.Time) events.Payload {
			return &catalog.FamilyMemberUpdated{ChannelUserID: sandboxChannelUser, OpenUserID: sandboxOpenUser, Member: sandboxMember, Changed: []string{"name"}}
		},
	},
	{
		name: "user.family_member.deleted", title: "Family member deleted",
		description: "A member was deleted on its own (members deleted with their group are reported by user.family_group.deleted).",
		versions: []version{{
			body: channelUser(
				prop("member_id", integer("the platform's id of the member")),
				prop("app_user_id", str("the partner's id of the member")),
				prop("family_group_id", integer("the group the member belonged to")),
			),
			sample: &catalog.FamilyMemberDeleted{ChannelUserID: "u-1", OpenUserID: 1001, MemberID: 3001, AppUserID: "kid", FamilyGroupID: 2001},
		}},
		sandbox: func(int64, time.Time) events.Payload {
			return &catalog.FamilyMemberDeleted{ChannelUserID: sandboxChannelUser, OpenUserID: sandboxOpenUser, MemberID: sandboxID, AppUserID: sandboxMember.AppUserID, FamilyGroupID: sandboxID}
		},
	},
	{
		name: "user.erased", title: "A person the app held was erased",
		description: "An operator erased one of the app's users (the right to erasure): the person's data key is destroyed, so the platform no longer holds any of their personal data and the app's channel-user routes answer 404 USER_NOT_FOUND for them.",
		versions: []version{{
			body: fixed(object(
				prop("event", constant("user.erased")),
				prop("delivery_id", deliveryID()),
				prop("app_id", integer("the app that held the person")),
				prop("open_user_id", integer("the platform's id of the erased user, the only id the body carries")),
				prop("occurred_at", dateTime()),
				prop("data", object(
					prop("erased_at", dateTime()),
					prop("acknowledge_path", str("the route that acknowledges this erasure (POST, signed like every partner write)")),
				)),
			)),
			sample: &catalog.UserErased{AppID: 7, OpenUserID: 1001, Reason: "PIPL request", ErasedBy: "operator:3", ErasedAt: sampleAt},
		}},
		sandbox: func(appID int64, at time.Time) events.Payload {
			// Ids only, as the real notice: the open_user_id and when.
			return &catalog.UserErased{AppID: appID, OpenUserID: sandboxOpenUser, ErasedAt: at}
		},
	},
	{
		name: "health.report.created", title: "Health report created",
		description: "A report was uploaded for a user bound to the app (an idempotent repeat of an upload sends nothing). Pull the report with `GET /open/v1/health-reports/{openReportId}`.",
		versions: []version{{
			body: healthReport("health.report.created"),
			sample: &catalog.ReportCreated{ReportID: 5001, AppID: 7, OpenUserID: 1001, ChannelUserID: "u-1", ReportType: ptr("BLOOD_PRESSURE"),
				UploadedAt: sampleAt, RawData: `{}`, UploadedBy: "uploader:1"},
		}},
		sandbox: func(appID int64, at time.Time) events.Payload {
			return &catalog.ReportCreated{ReportID: sandboxID, AppID: appID, OpenUserID: sandboxOpenUser, ChannelUserID: sandboxChannelUser, ReportType: &sandboxReportType, UploadedAt: at}
		},
	},
	{
		name: "health.report.updated", title: "Health report updated",
		description: "A report was changed (for example re-interpreted) by a PATCH that changed at least one field. Pull the report again and overwrite the local snapshot: events may arrive out of order and the pull is authoritative.",
		versions: []version{{
			body: healthReport("health.report.updated"),
			sample: &catalog.ReportUpdated{ReportID: 5001, AppID: 7, OpenUserID: 1001, ChannelUserID: "u-1", Changed: []string{"interpretation_result"},
				ReportType: ptr("BLOOD_PRESSURE"), InterpretationResult: ptr("elevated"), UpdatedBy: "uploader:1"},
		}},
		sandbox: func(appID int64, _ time.Time) events.Payload {
			return &catalog.ReportUpdated{ReportID: sandboxID, AppID: appID, OpenUserID: sandboxOpenUser, ChannelUserID: sandboxChannelUser, ReportType: &sandboxReportType}
		},
	},
	{
		name: "plugin.report.ready", title: "Plugin measurement ready",
		description: "A plugin measurement (or a sandbox mock measurement) was stored; for `ecg` and `bca` after the algorithm step finished. The only plugin event. Retries as for every webhook; when they are exhausted the delivery is `dead_letter` (resend it to try again).",
		versions: []version{{
			body: fixed(object(
				prop("event", constant("plugin.report.ready")),
				prop("delivery_id", deliveryID()),
				prop("app_id", integer("the app the measurement belongs to")),
				prop("measurement_no", str("equals measureId the plugin returned")),
				prop("third_user_id", nullable(str("the user id the host passed at launch"))),
				prop("platform_user_id", nullable(integer("set when the host passed a phone number and binding completed"))),
				prop("report_type", enum("blood_pressure", "blood_glucose", "spo2", "ecg", "bca")),
				prop("report_url", null("currently always null")),
				prop("metadata", nullable(str("the custom string the host passed at launch"))),
				prop("occurred_at", dateTime()),
			)),
			sample: &catalog.PluginMeasurementRecorded{PluginMeasurement: catalog.PluginMeasurement{
				MeasurementNo: "PM2024050100000042", SessionID: "0b6f1c9e-2a4d-4c8e-9f1a-7d3e5b2c1a90", AppID: 7, ThirdUserID: ptr("host user 1"),
				PlatformUserID: ptr(int64(1001)), ReportType: "blood_pressure", DeviceKey: "HOME_MULTI_BIO_MONITOR", MeasureMode: "BP", Metadata: ptr("order-9"),
			}, Data: `{"systolic":121}`},
		}},
		sandbox: func(appID int64, _ time.Time) events.Payload {
			return &catalog.PluginMeasurementAnalyzed{PluginMeasurement: catalog.PluginMeasurement{
				MeasurementNo: "PM9000000000000001", AppID: appID, ReportType: sandboxReportType, MeasureMode: "sandbox"}}
		},
	},
	{
		name: "order.shipped", title: "Order shipped (some or all of its items)",
		description: "A shipment of one of the app's orders was recorded: by the platform's shipping system (the internal callback), by an operator, or by the sandbox test route `POST /open/v1/order/shipped-callback-test`. One webhook per shipment, carrying its logistics company, tracking number and the device serial numbers of the items it sent; `complete=true` when the order is now `SHIPPED`. Read the order with `GET /open/v1/order/detail`.",
		versions: []version{{
			body: fixed(object(
				prop("event", constant("order.shipped")),
				prop("delivery_id", deliveryID()),
				prop("app_id", integer("the app that placed the order")),
				prop("order_code", str("the platform's order code")),
				prop("third_order_id", str("the partner's order id")),
				prop("logistics_company", str("")),
				prop("tracking_number", str("")),
				prop("shipped_at", dateTime()),
				prop("complete", boolean("true when the order is now SHIPPED")),
				prop("items", nullable(arrayOf(object(
					prop("item_id", integer("the order item")),
					prop("goods_code", str("")),
					prop("quantity", integer("units this shipment sent")),
					prop("device_sns", nullable(arrayOf(str("a device serial number")))),
				)))),
				prop("occurred_at", dateTime()),
			)),
			sample: &catalog.OrderShipped{OrderID: 1, OrderCode: "PO202405010001", AppID: 7, ThirdOrderID: "T-1", LogisticsCompany: "SF Express",
				TrackingNumber: "SF1234567890", ShippedAt: sampleAt, Complete: true, Source: "internal",
				Items: []catalog.ShippedLine{{ItemID: 1, GoodsCode: "G-BP-01", Quantity: 1, DeviceSNs: []string{"BP-0001"}}}},
		}},
		sandbox: func(appID int64, at time.Time) events.Payload {
			return &catalog.OrderShipped{AppID: appID, OrderCode: "SBX-ORDER", ThirdOrderID: "sandbox-order", LogisticsCompany: "SANDBOX-EXPRESS",
				TrackingNumber: "SBX0000000001", ShippedAt: at, Complete: true, Source: "sandbox_test",
				Items: []catalog.ShippedLine{{ItemID: sandboxID, GoodsCode: "SBX-GOODS", Quantity: 1, DeviceSNs: []string{}}}}
		},
	},
	{
		name: domain.TestEvent, title: "Test event sent from the developer portal",
		description: "Sent to one webhook endpoint when its developer presses \"Send test event\" in the developer portal, to check that the receiver is reachable and verifies signatures with that endpoint's secret. It is signed, retried and logged like every webhook, goes to that endpoint only (whatever its subscription), and never appears in the app's feed (`GET /open/v1/webhooks/events`). Receivers should answer 2xx and otherwise ignore it; a receiver that does not know the event type should do the same.",
		versions: []version{{
			body: fixed(object(
				prop("event", constant(domain.TestEvent)),
				prop("delivery_id", deliveryID()),
				prop("app_id", integer("the app")),
				prop("endpoint_id", integer("the endpoint the test was sent to (0: the app's default endpoint)")),
				prop("occurred_at", dateTime()),
				prop("data", object(prop("message", str("fixed text")))),
			)),
			sample: &catalog.AppWebhookTestRequested{AppID: 7, EndpointID: 12},
		}},
	},
}

// sampleAt is when the sample events happened: examples are rendered in
// the platform's zone (+08:00) like every delivery.
var sampleAt = time.Date(2024, 5, 1, 0, 30, 0, 0, time.UTC)

var sampleMember = catalog.Member{MemberID: 3001, AppUserID: "kid", AppGroupID: 12, FamilyGroupID: 2001, Name: "Kid", Relationship: "SON"}

// channelUser is the body of every user.* webhook around its data.
func channelUser(data ...member) schema {
	return func(event string) node {
		return object(
			prop("event", constant(event)),
			prop("delivery_id", deliveryID()),
			prop("app_id", integer("the app")),
			prop("open_user_id", integer("the platform's id of the user")),
			prop("channel_user_id", str("the partner's id of the user, given at binding")),
			prop("occurred_at", dateTime()),
			prop("data", object(data...)),
		)
	}
}

func memberFields(changed bool) []member {
	m := []member{
		prop("member_id", integer("the platform's id of the member")),
		prop("app_user_id", str("the partner's id of the member")),
		prop("family_group_id", integer("the member's group")),
		optional("app_group_id", integer("the partner's id of the group; left out when unknown")),
	}
	if changed {
		m = append(m, optional("changed_fields", arrayOf(str("name of a changed field"))))
	}
	return m
}

// healthReport is the spec's health.report.* body.
func healthReport(event string) schema {
	return fixed(object(
		prop("event", constant(event)),
		prop("open_user_id", integer("the platform's id of the user")),
		prop("channel_user_id", str("the partner's id of the user, given at binding")),
		prop("open_report_id", integer("the id for GET /open/v1/health-reports/{openReportId}")),
		prop("report_type", nullable(str("the report's type"))),
		prop("occurred_at", dateTime()),
		prop("delivery_id", deliveryID()),
	))
}

func ptr[T any](v T) *T { return &v }

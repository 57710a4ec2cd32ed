package webhooks

import (
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Sample values of a triggered sandbox event: recognisable, and ids no
// real user or order of the app is given (the platform's ids start at 1).
const (
	sandboxChannelUser = "sandbox-user"
	sandboxOpenUser    = 0
)

// SandboxSample is the source event a sandbox trigger of webhook event
// type event renders as, for appID at instant at; ok is false for a type
// that cannot be triggered (catalog.TriggerableWebhookEvents lists them).
func SandboxSample(event string, appID int64, at time.Time) (events.Payload, bool) {
	reportType := "ecg"
	member := catalog.Member{MemberID: 0, AppUserID: "sandbox-member", FamilyGroupID: 0, AppGroupID: 1}
	switch event {
	case "user.profile.updated":
		return &catalog.UserProfileUpdated{ChannelUserID: sandboxChannelUser, OpenUserID: sandboxOpenUser, Changed: []string{"name", "weight"}}, true
	case "user.family_group.created":
		return &catalog.FamilyGroupUpserted{ChannelUserID: sandboxChannelUser, OpenUserID: sandboxOpenUser, AppGroupID: 1, Name: "Sandbox family", Created: true}, true
	case "user.family_group.deleted":
		return &catalog.FamilyGroupDissolved{ChannelUserID: sandboxChannelUser, OpenUserID: sandboxOpenUser, AppGroupID: 1, DeletedMemberIDs: []int64{}}, true
	case "user.family_member.created":
		return &catalog.FamilyMemberCreated{ChannelUserID: sandboxChannelUser, OpenUserID: sandboxOpenUser, Member: member}, true
	case "user.family_member.updated":
		return &catalog.FamilyMemberUpdated{ChannelUserID: sandboxChannelUser, OpenUserID: sandboxOpenUser, Member: member, Changed: []string{"name"}}, true
	case "user.family_member.deleted":
		return &catalog.FamilyMemberDeleted{ChannelUserID: sandboxChannelUser, OpenUserID: sandboxOpenUser, AppUserID: member.AppUserID}, true
	case "health.report.created":
		return &catalog.ReportCreated{AppID: appID, OpenUserID: sandboxOpenUser, ChannelUserID: sandboxChannelUser, ReportType: &reportType, UploadedAt: at}, true
	case "health.report.updated":
		return &catalog.ReportUpdated{AppID: appID, OpenUserID: sandboxOpenUser, ChannelUserID: sandboxChannelUser, ReportType: &reportType}, true
	case "plugin.report.ready":
		return &catalog.PluginMeasurementAnalyzed{PluginMeasurement: catalog.PluginMeasurement{
			MeasurementNo: "SBX-MEASUREMENT", AppID: appID, ReportType: reportType, MeasureMode: "sandbox"}}, true
	case "order.shipped":
		return &catalog.OrderShipped{AppID: appID, OrderCode: "SBX-ORDER", ThirdOrderID: "sandbox-order", LogisticsCompany: "SANDBOX-EXPRESS",
			TrackingNumber: "SBX0000000001", ShippedAt: at, Complete: true, Source: "sandbox_test",
			Items: []catalog.ShippedLine{{GoodsCode: "SBX-GOODS", Quantity: 1, DeviceSNs: []string{}}}}, true
	}
	return nil, false
}

package webhooks

import (
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Sample values of a triggered sandbox event: recognisable, and ids no
// real user, member, group, report or order item is given (the platform
// hands ids out from 1 upwards; this is the largest integer every JSON
// parser reads exactly).
const (
	sandboxChannelUser = "sandbox-user"
	sandboxID          = 1<<53 - 1
	sandboxOpenUser    = sandboxID
)

// SandboxSample is the source event a sandbox trigger of webhook event
// type event renders as, for appID at instant at; ok is false for a type
// that cannot be triggered (catalog.TriggerableWebhookEvents lists them).
func SandboxSample(event string, appID int64, at time.Time) (events.Payload, bool) {
	reportType := "ecg"
	member := catalog.Member{MemberID: sandboxID, AppUserID: "sandbox-member", FamilyGroupID: sandboxID, AppGroupID: 1}
	switch event {
	case "user.profile.updated":
		return &catalog.UserProfileUpdated{ChannelUserID: sandboxChannelUser, OpenUserID: sandboxOpenUser, Changed: []string{"name", "nickname"}}, true
	case "user.family_group.created":
		return &catalog.FamilyGroupUpserted{ChannelUserID: sandboxChannelUser, OpenUserID: sandboxOpenUser, FamilyGroupID: sandboxID, AppGroupID: 1, Name: "Sandbox family", Created: true}, true
	case "user.family_group.deleted":
		return &catalog.FamilyGroupDissolved{ChannelUserID: sandboxChannelUser, OpenUserID: sandboxOpenUser, FamilyGroupID: sandboxID, AppGroupID: 1, DeletedMemberIDs: []int64{sandboxID}}, true
	case "user.family_member.created":
		return &catalog.FamilyMemberCreated{ChannelUserID: sandboxChannelUser, OpenUserID: sandboxOpenUser, Member: member}, true
	case "user.family_member.updated":
		return &catalog.FamilyMemberUpdated{ChannelUserID: sandboxChannelUser, OpenUserID: sandboxOpenUser, Member: member, Changed: []string{"name"}}, true
	case "user.family_member.deleted":
		return &catalog.FamilyMemberDeleted{ChannelUserID: sandboxChannelUser, OpenUserID: sandboxOpenUser, MemberID: sandboxID, AppUserID: member.AppUserID, FamilyGroupID: sandboxID}, true
	case "health.report.created":
		return &catalog.ReportCreated{ReportID: sandboxID, AppID: appID, OpenUserID: sandboxOpenUser, ChannelUserID: sandboxChannelUser, ReportType: &reportType, UploadedAt: at}, true
	case "health.report.updated":
		return &catalog.ReportUpdated{ReportID: sandboxID, AppID: appID, OpenUserID: sandboxOpenUser, ChannelUserID: sandboxChannelUser, ReportType: &reportType}, true
	case "plugin.report.ready":
		return &catalog.PluginMeasurementAnalyzed{PluginMeasurement: catalog.PluginMeasurement{
			MeasurementNo: "PM9000000000000001", AppID: appID, ReportType: reportType, MeasureMode: "sandbox"}}, true
	case "order.shipped":
		return &catalog.OrderShipped{AppID: appID, OrderCode: "SBX-ORDER", ThirdOrderID: "sandbox-order", LogisticsCompany: "SANDBOX-EXPRESS",
			TrackingNumber: "SBX0000000001", ShippedAt: at, Complete: true, Source: "sandbox_test",
			Items: []catalog.ShippedLine{{ItemID: sandboxID, GoodsCode: "SBX-GOODS", Quantity: 1, DeviceSNs: []string{}}}}, true
	}
	return nil, false
}

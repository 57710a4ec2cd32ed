// Package feedtest builds a log of real catalog events, one or more of every
// type, filled with recognisable personal values, so tests of the feed and
// of the relay can prove that none of them reaches the analytics topic.
package feedtest

import (
	"fmt"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Personal values written into the events; none may appear in an analytics
// message. Every string marker also contains "PII" so a single search finds any leak.
var Personal = []string{
	"PII", "13800138000", "pii@example.com", "1949-12-31", "11010519491231002X",
	"Zhang San", "PII-RAW-DEVICE",
}

// Ids of the person in the events, so tests can check pseudonyms replaced them.
const (
	AppID         = 7
	OpenUserID    = 4242
	MemberID      = 9191
	FamilyGroupID = 5151
	CardNumber    = "8800123456789"
)

func s(v string) *string { return &v }
func i(v int64) *int64   { return &v }

// Payloads returns one payload of every catalog type (some twice), with
// the stream each lives in.
func Payloads() []struct {
	Stream  string
	Payload events.Payload
} {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	user := domain.UserStream(OpenUserID)
	profile := catalog.Profile{Name: "Zhang San PII", Nickname: s("PII-nick"), Gender: "M", Avatar: s("https://pii.example/a.png"),
		Phone: s("13800138000"), Email: s("pii@example.com"), BirthDate: s("1949-12-31")}
	member := catalog.Member{MemberID: MemberID, AppUserID: "PII-app-user", AppGroupID: 20, FamilyGroupID: FamilyGroupID,
		Name: "Zhang San PII junior", Relationship: "PII-son", Gender: s("M"), BirthDate: s("1949-12-31"), Phone: s("13800138000"),
		IDType: s("PII-idcard"), IDNumber: s("11010519491231002X"), Height: i(181), Weight: i(77), BloodType: s("PII-AB"), IsDefault: true}
	plugin := catalog.PluginMeasurement{MeasurementNo: "M-1", SessionID: "sess-1", AppID: AppID, ThirdUserID: s("PII-third-user"),
		PlatformUserID: i(OpenUserID), ReportType: "ecg", DeviceKey: "ecg-patch", MeasureMode: "single", Metadata: s("PII-metadata")}
	card := domain.CardStream(CardNumber)
	type sp = struct {
		Stream  string
		Payload events.Payload
	}
	return []sp{
		{domain.IDStream("user"), catalog.IDBlockReserved{Kind: "user", First: 1, Last: 50}},
		{domain.AppStream(AppID), catalog.AppCreated{AppID: AppID, Name: "Acme Health", AppKey: "ak_PII", SealedAppSecret: "v1:PII",
			SealedWebhookSecret: "v1:PII", WebhookURL: "https://PII.example/hook", Environment: "sandbox", Scopes: []string{"users"}}},
		{domain.AppStream(AppID), catalog.AppSecretRotated{AppID: AppID, SealedAppSecret: "v1:PII"}},
		{domain.AppStream(AppID), catalog.AppWebhookConfigured{AppID: AppID, WebhookURL: "https://PII.example/hook"}},
		{domain.AppStream(AppID), catalog.AppReviewed{AppID: AppID, Approved: true, Notes: "PII notes", ProductionAppID: 8}},
		{domain.AppStream(AppID), catalog.AppScopesDeclared{AppID: AppID, Scopes: []string{"users", "reports"}}},
		{domain.AppStream(AppID), catalog.AppSuspended{AppID: AppID, Reason: "PII reason"}},
		{domain.AppStream(AppID), catalog.AppResumed{AppID: AppID}},
		{domain.AppStream(AppID), catalog.AppWebhookSecretIssued{AppID: AppID, SealedPendingWebhookSecret: "v1:PII"}},
		{domain.AppStream(AppID), catalog.AppWebhookSecretActivated{AppID: AppID}},
		{domain.AppStream(AppID), catalog.AppWebhookEndpointAdded{AppID: AppID, EndpointID: 3, URL: "https://PII.example/hook2", Events: []string{"order.*"}, SealedWebhookSecret: "v1:PII"}},
		{domain.AppStream(AppID), catalog.AppWebhookEndpointUpdated{AppID: AppID, EndpointID: 3, URL: "https://PII.example/hook3"}},
		{domain.AppStream(AppID), catalog.AppWebhookEndpointDisabled{AppID: AppID, EndpointID: 3}},
		{domain.AppStream(AppID), catalog.AppWebhookEndpointEnabled{AppID: AppID, EndpointID: 3}},
		{domain.AppStream(AppID), catalog.AppWebhookEndpointSecretIssued{AppID: AppID, EndpointID: 3, SealedPendingWebhookSecret: "v1:PII"}},
		{domain.AppStream(AppID), catalog.AppWebhookEndpointSecretActivated{AppID: AppID, EndpointID: 3}},
		{domain.AppStream(AppID), catalog.AppWebhookTestRequested{AppID: AppID, EndpointID: 3}},
		{domain.AppStream(AppID), catalog.AppWebhookEndpointRemoved{AppID: AppID, EndpointID: 3}},
		{domain.LegacyBindingStream(AppID, "PII-channel-user"), catalog.ChannelUserBound{AppID: AppID, ChannelUserID: "PII-channel-user", OpenUserID: OpenUserID}},
		{user, catalog.UserRegistered{AppID: AppID, OpenUserID: OpenUserID, ChannelUserID: "PII-channel-user", Profile: profile, RegisteredAt: t0}},
		{user, catalog.UserProfileUpdated{ChannelUserID: "PII-channel-user", OpenUserID: OpenUserID, Changed: []string{"phone"}, Profile: profile}},
		{user, catalog.FamilyGroupUpserted{ChannelUserID: "PII-channel-user", OpenUserID: OpenUserID, FamilyGroupID: FamilyGroupID, AppGroupID: 20, Name: "PII family", Created: true}},
		{user, catalog.FamilyMemberCreated{ChannelUserID: "PII-channel-user", OpenUserID: OpenUserID, Member: member}},
		{user, catalog.FamilyMemberUpdated{ChannelUserID: "PII-channel-user", OpenUserID: OpenUserID, Changed: []string{"weight"}, Member: member}},
		{user, catalog.FamilyMemberDeleted{ChannelUserID: "PII-channel-user", OpenUserID: OpenUserID, MemberID: MemberID, AppUserID: "PII-app-user", FamilyGroupID: FamilyGroupID}},
		{user, catalog.FamilyGroupDissolved{ChannelUserID: "PII-channel-user", OpenUserID: OpenUserID, FamilyGroupID: FamilyGroupID, AppGroupID: 20, DeletedMemberIDs: []int64{MemberID}}},
		{domain.DeliveryStream("d-1"), catalog.DeliveryCreated{DeliveryID: "d-1", AppID: AppID, Event: "user.profile.updated", SourceEventID: "e",
			SourceStream: user, SourceRecordedAt: t0, Body: `{"channel_user_id":"PII-channel-user"}`, Deliver: true}},
		{domain.DeliveryStream("d-1"), catalog.DeliveryAttempted{DeliveryID: "d-1", Attempt: 1, At: t0, URL: "https://PII.example/hook", Outcome: "delivered", ResponseExcerpt: "PII echo", OpenUserID: OpenUserID}},
		{domain.DeliveryStream("d-1"), catalog.DeliveryResendRequested{DeliveryID: "d-1", RequestedBy: "PII-operator", At: t0}},
		{domain.ReportKeyStream("station", "PII-request"), catalog.ReportKeyClaimed{Uploader: "station", RequestReportID: "PII-request", ReportID: 31}},
		{domain.ReportStream(31), catalog.ReportCreated{ReportID: 31, AppID: AppID, OpenUserID: OpenUserID, ChannelUserID: "PII-channel-user",
			OpenMemberID: i(MemberID), RequestReportID: s("PII-request"), MeasurementNo: s("PII-measurement"), DeviceSN: s("PII-SN"),
			ReportType: s("ecg"), FilePath: s("/PII/file.pdf"), InterpretationResult: s("PII-RESULT"), InterpretationDetail: `{"PII":"detail"}`,
			InterpretationMethod: s("ai"), UploadedAt: t0, ExaminedAt: &t0, Meta: catalog.ReportMeta{PointsCode: s("P-01"), DataSource: s("station"),
				OperatorName: s("PII operator"), OperatorPlatformUserID: i(77)}, RawData: `{"PII-RAW-DEVICE":[1,2,3]}`, UploadedBy: "PII-uploader"}},
		{domain.ReportStream(31), catalog.ReportUpdated{ReportID: 31, AppID: AppID, OpenUserID: OpenUserID, ChannelUserID: "PII-channel-user",
			Changed: []string{"interpretation_result"}, ReportType: s("ecg"), InterpretationResult: s("PII-RESULT"), InterpretationDetail: `{"PII":1}`,
			InterpretedAt: &t0, UpdatedBy: "PII-operator"}},
		{domain.ReportStream(31), catalog.ReportViewed{ReportID: 31, AppID: AppID}},
		{domain.UploaderStream(3), catalog.UploaderRegistered{UploaderID: 3, Name: "PII station", TokenHash: "PII-hash"}},
		{"oauth-token-PII", catalog.TokenIssued{TokenHash: "PII-hash", AppID: AppID, Scope: "report", ExpiresAt: t0}},
		{"oauth-token-PII", catalog.TokenRevoked{TokenHash: "PII-hash", AppID: AppID}},
		{domain.PluginNonceStream(AppID, "PII-nonce"), catalog.PluginNonceClaimed{AppID: AppID, Nonce: "PII-nonce", SessionID: "sess-1"}},
		{domain.PluginSessionStream("sess-1"), catalog.PluginSessionOpened{SessionID: "sess-1", AppID: AppID, ThirdUserID: "PII-third-user",
			DeviceKey: "ecg-patch", MeasureMode: "single", ReportType: "ecg", Phone: "13800138000", Gender: "F", BirthDate: "1949-12-31",
			Height: 170, Weight: 60, Metadata: s("PII-metadata"), ExpiresAt: t0}},
		{domain.PluginSessionStream("sess-1"), catalog.PluginMeasurementRecorded{PluginMeasurement: plugin, DeviceSN: s("PII-SN"),
			Data: `{"PII-RAW-DEVICE":true}`, NeedsAnalysis: true}},
		{domain.PluginSessionStream("sess-1"), catalog.PluginMeasurementAnalyzed{PluginMeasurement: plugin, Result: `{"PII-RESULT":1}`}},
		{domain.GoodsStream("G-1"), catalog.GoodsCreated{GoodsID: 1, GoodsCode: "G-1", GoodsName: "ECG patch"}},
		{domain.GoodsStream("G-1"), catalog.GoodsUpdated{GoodsID: 1, GoodsCode: "G-1", GoodsName: "ECG patch 2"}},
		{domain.GoodsStream("G-1"), catalog.GoodsActivation{GoodsID: 1, GoodsCode: "G-1", Active: false}},
		{domain.OrderKeyStream(AppID, "PII-third-order"), catalog.OrderKeyClaimed{AppID: AppID, ThirdOrderID: "PII-third-order", OrderID: 61}},
		{domain.OrderStream(61), catalog.OrderCreated{OrderID: 61, OrderCode: "O-61", AppID: AppID, ThirdOrderID: "PII-third-order", UserID: i(OpenUserID),
			ContactPerson: "Zhang San PII", ContactPhone: "13800138000", Address: "PII Road 1", AreaCode: s("310104"), AreaText: s("PII district"),
			LogisticsType: "express", PostagePolicy: "free", OrderSource: "api", CooperationType: "direct", OrderTime: t0,
			Items:       []catalog.OrderLine{{ItemID: 1, GoodsID: 1, GoodsCode: "G-1", GoodsName: "ECG patch", Quantity: 2, UnitPrice: 990, TotalPrice: 1980}},
			RequestHash: "PII-hash"}},
		{domain.OrderStream(61), catalog.OrderReviewed{OrderID: 61, AppID: AppID, Approved: false, Reason: s("PII reason"), By: "PII-operator"}},
		{domain.OrderStream(61), catalog.OrderShipped{OrderID: 61, OrderCode: "O-61", AppID: AppID, ThirdOrderID: "PII-third-order", LogisticsCompany: "SF",
			TrackingNumber: "PII-TRACK", Items: []catalog.ShippedLine{{ItemID: 1, GoodsCode: "G-1", Quantity: 2, DeviceSNs: []string{"PII-SN"}}},
			ShippedAt: t0, Complete: true, Source: "internal"}},
		{domain.ProviderStream(4), catalog.ProviderRegistered{ProviderID: 4, AppID: AppID, Name: "Clinic", Type: "clinic", Contact: "Zhang San PII 13800138000", PointsCode: s("P-01")}},
		{domain.ProviderStream(4), catalog.ProviderReviewed{ProviderID: 4, Approved: true, Notes: "PII notes"}},
		{domain.ProviderStream(4), catalog.ProviderItemsConfigured{ProviderID: 4, AllowedItemIDs: []int64{11}}},
		{domain.BenefitItemStream(11), catalog.BenefitItemCreated{BenefitItemID: 11, Name: "Checkup"}},
		{domain.BenefitItemStream(11), catalog.BenefitItemStatusChanged{BenefitItemID: 11, Status: "SUSPENDED"}},
		{domain.CardBatchStream(AppID, "k"), catalog.CardBatchPlanned{IssuerAppID: AppID, Key: "k", Cards: []catalog.PlannedCard{{CardNumber: CardNumber, UserBenefitItemIDs: []int64{71}}}}},
		{domain.CardBatchStream(AppID, "k"), catalog.CardBatchRenumbered{IssuerAppID: AppID, Index: 0, CardNumber: CardNumber}},
		{card, catalog.CardIssued{CardNumber: CardNumber, IssuerAppID: AppID, HolderName: "Zhang San PII", HolderPhone: s("13800138000"), ExpiresAt: t0,
			Items: []catalog.CardLine{{UserBenefitItemID: 71, BenefitItemID: 11, Quantity: 3}}, IssuedBy: "PII-operator"}},
		{domain.CardBatchStream(AppID, "k"), catalog.CardBatchCompleted{IssuerAppID: AppID, Cards: 1}},
		{card, catalog.BenefitFulfilled{RecordID: 81, CardNumber: CardNumber, IssuerAppID: AppID, UserBenefitItemID: 71, BenefitItemID: 11,
			BenefitItemName: "Checkup", ProviderID: 4, ProviderAppID: 9, Quantity: 1, Remaining: 2, PointsCode: s("P-01"), Remark: s("PII remark"), At: t0}},
		{"fulfillment-81", catalog.FulfillmentRated{RecordID: 81, IssuerAppID: AppID, Rating: 5}},
		{domain.IdempotencyStream(AppID, "k"), catalog.IdempotencyClaimed{AppID: AppID, Method: "POST", Path: "/PII", BodySHA256: "x", ClaimedAt: t0}},
		{domain.IdempotencyStream(AppID, "k"), catalog.IdempotencyCompleted{AppID: AppID, Status: 200, SealedBody: "v1:PII", CompletedAt: t0}},
		{domain.IdempotencyStream(AppID, "k"), catalog.IdempotencyReleased{AppID: AppID, Status: 500, ReleasedAt: t0}},
	}
}

// Events encodes Payloads with the catalog registry as a log would record
// them from position first on, with revisions per stream and metadata
// carrying the app and a personal actor.
func Events(first uint64) []events.Recorded {
	reg := catalog.Registry()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	revs := map[string]uint64{}
	var out []events.Recorded
	for n, p := range Payloads() {
		prop, err := reg.Encode(p.Payload, events.Metadata{AppID: AppID, Actor: "PII-actor", RequestID: "req-1", OccurredAt: t0.Add(time.Duration(n) * time.Second)})
		if err != nil {
			panic(fmt.Sprintf("feedtest: %v", err))
		}
		pos := first + uint64(n)
		out = append(out, events.Recorded{ID: prop.ID, Stream: p.Stream, Type: prop.Type, Revision: revs[p.Stream],
			Position: events.Position{Commit: pos, Prepare: pos}, Created: t0.Add(time.Duration(n) * time.Second), Data: prop.Data, Meta: prop.Meta})
		revs[p.Stream]++
	}
	return out
}

package feed

// The table below is the whole published contract: one entry per published
// event type, each listing every field the feed carries. A field of the
// event that is not listed is dropped; a type that is not listed is not
// published. Adding a type or a field here means adding (or extending) its
// schema file: TestSchemaFilesMatchTable fails until `go test ./relay/feed
// -run TestSchemaFilesMatchTable -update` rewrites them, so the contract
// change shows in review.
//
// What stays: ids of non-personal things (apps, reports, orders, goods,
// providers, benefit items, fulfilment records, plugin sessions), amounts,
// quantities, statuses, codes, device kinds, report types and times.
// What becomes a pseudonym: open_user_id (and the user stream), member ids,
// family group ids, card numbers (and the card stream), plugin third-party
// user ids (scoped by app). What is dropped: names, nicknames, phones,
// emails, birth dates, avatars, genders, heights, weights, blood types,
// relationships, id types and numbers, addresses and contact persons,
// partner-side user, member, group and order ids (each has a platform id or
// pseudonym beside it), device serial numbers, tracking numbers, report
// results, details, files and raw device data, free text (reasons, notes,
// remarks), and who did it (operators, uploaders).
//
// Never published (internal plumbing): ids.block_reserved, app.secret_rotated,
// app.webhook_configured, app.webhook_secret_issued, app.webhook_secret_activated,
// app.webhook_endpoint_*, app.webhook_test_requested,
// channel_user.bound, report.key_claimed, order.key_claimed, uploader.registered,
// oauth.token.*, plugin.nonce.claimed, webhook.delivery.*, idempotency.*,
// benefit_card.batch_*; and every type added later until it gets an entry.

// Pseudonym namespaces.
const (
	NSUser        = "open_user"
	NSMember      = "member"
	NSFamilyGroup = "family_group"
	NSCard        = "card"
	NSThirdUser   = "plugin_third_user"
)

var pseudonymousStreams = []struct{ prefix, namespace string }{
	{"user-", NSUser},
	{"card-", NSCard},
}

type kind int

const (
	kInt kind = iota
	kStr
	kBool
	kTime
	kInts
	kStrs
	kRef
	kRefs
	kObjs
)

func (k kind) isList() bool { return k == kInts || k == kStrs || k == kRefs || k == kObjs }

type field struct {
	out   string // name in the published data
	in    string // dotted path in the event's JSON
	kind  kind
	null  bool   // may be null (absent in the event)
	ns    string // pseudonym namespace (kRef, kRefs)
	scope string // path of the value that scopes the pseudonym
	sub   []field
	doc   string
}

type entry struct {
	version int
	doc     string
	fields  []field
}

func fld(name string, k kind) field        { return field{out: name, in: name, kind: k} }
func num(name string) field                { return fld(name, kInt) }
func str(name string) field                { return fld(name, kStr) }
func boolean(name string) field            { return fld(name, kBool) }
func at(name string) field                 { return fld(name, kTime) }
func (f field) from(path string) field     { f.in = path; return f }
func (f field) nullable() field            { f.null = true; return f }
func (f field) scoped(path string) field   { f.scope = path; return f }
func objs(name string, sub ...field) field { f := fld(name, kObjs); f.sub = sub; return f }
func ref(out, in, ns string) field {
	return field{out: out, in: in, kind: kRef, ns: ns, doc: "keyed pseudonym (" + ns + ")"}
}
func refs(out, in, ns string) field {
	return field{out: out, in: in, kind: kRefs, ns: ns, doc: "keyed pseudonyms (" + ns + ")"}
}
func userRef(in string) field              { return ref("user_ref", in, NSUser) }
func memberRef(in string) field            { return ref("member_ref", in, NSMember) }
func groupRef(in string) field             { return ref("family_group_ref", in, NSFamilyGroup) }
func cardRef() field                       { return ref("card_ref", "card_number", NSCard) }
func thirdUserRef(in string) field         { return ref("third_user_ref", in, NSThirdUser).scoped("app_id") }
func v1(doc string, fields ...field) entry { return entry{version: 1, doc: doc, fields: fields} }
func strs(name string) field               { return fld(name, kStrs) }
func ints(name string) field               { return fld(name, kInts) }

var table = map[string]entry{
	"app.created": v1("A partner application was created (sandbox or production).",
		num("app_id"), str("name"), str("environment"), strs("scopes"), num("sandbox_app_id").nullable()),
	"app.reviewed": v1("A sandbox app's onboarding review was decided.",
		num("app_id"), boolean("approved"), num("production_app_id").nullable()),
	"app.scopes_declared": v1("An app declared the API scopes it uses.",
		num("app_id"), strs("scopes")),
	"app.suspended": v1("An operator suspended an app (the reason is not published).",
		num("app_id")),
	"app.resumed": v1("An app's suspension was lifted.",
		num("app_id")),

	"user.registered": v1("A channel user registered with an app.",
		userRef("open_user_id"), num("app_id"), at("registered_at")),
	"user.profile.updated": v1("A user's profile changed; only the names of the changed fields are published.",
		userRef("open_user_id"), strs("changed")),
	"user.family_group.created": v1("A family group was created (created=true) or renamed (created=false).",
		userRef("open_user_id"), groupRef("family_group_id"), boolean("created")),
	"user.family_group.deleted": v1("A family group was dissolved with the members it deleted.",
		userRef("open_user_id"), groupRef("family_group_id"), refs("deleted_member_refs", "deleted_member_ids", NSMember)),
	"user.family_member.created": v1("A family member was added.",
		userRef("open_user_id"), memberRef("member.member_id"), groupRef("member.family_group_id"),
		boolean("is_default").from("member.is_default")),
	"user.family_member.updated": v1("A family member changed; only the names of the changed fields are published.",
		userRef("open_user_id"), memberRef("member.member_id"), groupRef("member.family_group_id"),
		boolean("is_default").from("member.is_default"), strs("changed")),
	"user.family_member.deleted": v1("A family member was deleted.",
		userRef("open_user_id"), memberRef("member_id"), groupRef("family_group_id")),

	"report.created": v1("A measurement report was uploaded; results and raw data are not published.",
		num("report_id"), num("app_id"), userRef("open_user_id"), memberRef("open_member_id").nullable(),
		str("report_type").nullable(), str("interpretation_method").nullable(),
		at("uploaded_at"), at("examined_at").nullable(), at("interpreted_at").nullable(),
		str("points_code").from("meta.points_code").nullable(), str("data_source").from("meta.data_source").nullable()),
	"report.updated": v1("A report was re-interpreted; only the names of the changed fields are published.",
		num("report_id"), num("app_id"), userRef("open_user_id"), strs("changed"),
		str("report_type").nullable(), str("interpretation_method").nullable(), at("interpreted_at").nullable()),
	"report.viewed": v1("The owning app pulled a report for the first time.",
		num("report_id"), num("app_id")),

	"plugin.session.opened": v1("A measurement plugin was launched; the user profile is not published.",
		str("session_id"), num("app_id"), thirdUserRef("third_user_id"), str("device_key"), str("measure_mode"),
		str("report_type"), boolean("sandbox"), at("expires_at")),
	"plugin.measurement.recorded": v1("A plugin measurement was recorded; device data are not published.",
		str("measurement_no"), str("session_id"), num("app_id"), thirdUserRef("third_user_id").nullable(),
		userRef("platform_user_id").nullable(), str("report_type"), str("device_key"), str("measure_mode"),
		boolean("needs_analysis"), boolean("mock")),
	"plugin.measurement.analyzed": v1("A plugin measurement was analysed; the result is not published.",
		str("measurement_no"), str("session_id"), num("app_id"), thirdUserRef("third_user_id").nullable(),
		userRef("platform_user_id").nullable(), str("report_type"), str("device_key"), str("measure_mode")),

	"goods.created": v1("Goods were added to the catalogue.",
		num("goods_id"), str("goods_code"), str("goods_name")),
	"goods.updated": v1("Goods were renamed.",
		num("goods_id"), str("goods_code"), str("goods_name")),
	"goods.activation_changed": v1("Goods were withdrawn from (active=false) or restored to ordering.",
		num("goods_id"), str("goods_code"), boolean("active")),
	"order.created": v1("A purchase order was placed; receiver and address are not published (area_code is).",
		num("order_id"), str("order_code"), num("app_id"), userRef("user_id").nullable(), str("area_code").nullable(),
		str("logistics_type"), str("postage_policy"), num("postage_amount"), str("order_source"), str("cooperation_type"),
		at("order_time"),
		objs("items", num("item_id"), num("goods_id"), str("goods_code"), str("goods_name"), num("quantity"),
			num("unit_price"), num("total_price"))),
	"order.reviewed": v1("An order was approved or rejected.",
		num("order_id"), num("app_id"), boolean("approved")),
	"order.shipped": v1("An order (or part of it) shipped; device serial and tracking numbers are not published.",
		num("order_id"), str("order_code"), num("app_id"), str("logistics_company"),
		objs("items", num("item_id"), str("goods_code"), num("quantity")),
		at("shipped_at"), boolean("complete"), str("source")),

	"provider.registered": v1("A service provider registered; its contact is not published.",
		num("provider_id"), num("app_id"), str("name"), str("type"), str("points_code").nullable()),
	"provider.reviewed": v1("A service provider was approved or rejected.",
		num("provider_id"), boolean("approved")),
	"provider.items_configured": v1("The benefit items a provider may verify were set.",
		num("provider_id"), ints("allowed_benefit_item_ids")),
	"benefit_item.created": v1("A kind of benefit was created.",
		num("benefit_item_id"), str("name")),
	"benefit_item.status_changed": v1("A benefit item was suspended or reactivated.",
		num("benefit_item_id"), str("status")),
	"benefit_card.issued": v1("A benefit card was issued; the holder is not published, the card number is a pseudonym.",
		cardRef(), num("issuer_app_id"), at("expires_at"),
		objs("items", num("user_benefit_item_id"), num("benefit_item_id"), num("quantity"))),
	"benefit.fulfilled": v1("A benefit was used at a provider; the remark is not published.",
		num("fulfillment_record_id"), cardRef(), num("issuer_app_id"), num("user_benefit_item_id"),
		num("benefit_item_id"), str("benefit_item_name"), num("provider_id"), num("provider_app_id"),
		num("quantity"), num("remaining_quantity"), str("points_code").nullable(), at("at")),
	"benefit.fulfillment_rated": v1("A benefit use was rated.",
		num("fulfillment_record_id"), num("issuer_app_id"), num("rating")),
}

// publishedOrder is the table's types in the order above, for documentation and tests.
var publishedOrder = []string{
	"app.created", "app.reviewed", "app.scopes_declared", "app.suspended", "app.resumed",
	"user.registered", "user.profile.updated", "user.family_group.created", "user.family_group.deleted",
	"user.family_member.created", "user.family_member.updated", "user.family_member.deleted",
	"report.created", "report.updated", "report.viewed",
	"plugin.session.opened", "plugin.measurement.recorded", "plugin.measurement.analyzed",
	"goods.created", "goods.updated", "goods.activation_changed",
	"order.created", "order.reviewed", "order.shipped",
	"provider.registered", "provider.reviewed", "provider.items_configured",
	"benefit_item.created", "benefit_item.status_changed",
	"benefit_card.issued", "benefit.fulfilled", "benefit.fulfillment_rated",
}

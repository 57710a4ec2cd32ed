package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Redacted replaces a personal field's value wherever personal data is
// shown without a reveal (admin history, admin event pages).
const Redacted = "[redacted]"

// personalFields lists, per event type, the JSON paths of the event's data
// that hold personal or health data: names, nicknames, genders, phones,
// emails, id types and numbers, birth dates, avatars, family relations,
// addresses, body measurements, report results and raw device data, plugin
// profiles, card holders, and webhook bodies (which copy all of these).
// A path is dot-separated JSON names; "name[]" steps into every element of
// an array. Every event type has an entry, an empty one when it holds none
// (TestEveryEventTypeListsItsPersonalFields keeps it complete), so a new
// event type cannot be forgotten. Per-person encryption (package privacy)
// seals exactly these fields; admin reads redact them.
var personalFields = map[string][]string{
	"ids.block_reserved":           nil,
	"app.created":                  nil,
	"app.secret_rotated":           nil,
	"app.webhook_configured":       nil,
	"app.scopes_declared":          nil,
	"app.reviewed":                 nil,
	"app.suspended":                nil,
	"app.resumed":                  nil,
	"app.authentication_set":       nil,
	"app.webhook_secret_issued":    nil,
	"app.webhook_secret_activated": nil,
	"app.review_requested":         nil,
	// Secrets are sealed with the master key, not per person.
	"app.production_credentials_revealed": nil,
	// The partner's channel_user_id is often an e-mail address or a phone
	// number: personal wherever an event carries it. Its binding stream is
	// named after a keyed hash of it (domain.Pseudonyms), never after it.
	"channel_user.bound":   {"channel_user_id"},
	"user.registered":      append([]string{"channel_user_id"}, profilePaths...),
	"user.profile.updated": append([]string{"channel_user_id"}, profilePaths...),
	// A group's name is the partner's free text ("Li family"), often a surname.
	"user.family_group.created":  {"channel_user_id", "name"},
	"user.family_group.deleted":  {"channel_user_id"},
	"user.family_member.created": append([]string{"channel_user_id"}, memberPaths...),
	"user.family_member.updated": append([]string{"channel_user_id"}, memberPaths...),
	"user.family_member.deleted": {"channel_user_id"},
	// The body is the webhook as sent: it copies the person's fields.
	"webhook.delivery.created": {"body"},
	// A receiver's answer may echo what it was sent.
	"webhook.delivery.attempted":        {"response_excerpt"},
	"webhook.delivery.resend_requested": nil,
	"report.created": {"channel_user_id", "file_path", "interpretation_result", "interpretation_detail",
		"meta.operator_name", "raw_data"},
	"report.updated":       {"channel_user_id", "file_path", "interpretation_result", "interpretation_detail"},
	"report.viewed":        nil,
	"report.key_claimed":   nil,
	"uploader.registered":  nil,
	"oauth.token.issued":   nil,
	"oauth.token.revoked":  nil,
	"plugin.nonce.claimed": nil,
	"plugin.session.opened": {"phone", "gender", "birth_date", "height", "weight",
		"metadata"},
	"plugin.measurement.recorded": {"metadata", "data"},
	"plugin.measurement.analyzed": {"metadata", "result"},
	"goods.created":               nil,
	"goods.updated":               nil,
	"goods.activation_changed":    nil,
	"order.key_claimed":           nil,
	"order.created":               {"contact_person", "contact_phone", "address", "area_text"},
	"order.reviewed":              nil,
	"order.shipped":               nil,
	// A provider's contact is a person's name or phone.
	"provider.registered":           {"contact"},
	"provider.reviewed":             nil,
	"provider.items_configured":     nil,
	"benefit_item.created":          nil,
	"benefit_item.status_changed":   nil,
	"benefit_card.issued":           {"holder_name", "holder_phone"},
	"benefit.fulfilled":             nil,
	"benefit.fulfillment_rated":     nil,
	"benefit_card.batch_planned":    nil,
	"benefit_card.batch_renumbered": nil,
	"benefit_card.batch_completed":  nil,
	"idempotency.claimed":           nil,
	"idempotency.completed":         nil, // the stored answer is sealed already: with its user's data key, or the master key
	"idempotency.released":          nil,
	"operator.created":              nil, // staff accounts, not data subjects
	"operator.revoked":              nil,
	"operator.portal_signed_in":     nil,
	"operator.portal_signed_out":    nil,
	"audit.access_recorded":         nil,
	// Who erased whom, when and why; the reason is operator text that must
	// not quote personal data (README, "Erasure"). Neither carries the
	// channel_user_id any more; events written before do, in clear, and
	// admin reads redact it.
	"user.erased":          {"channel_user_id"},
	"channel_user.unbound": {"channel_user_id"},
	// Ids and times only: an erased person's acknowledgement names no personal data.
	"user.erasure_acknowledged": nil,
	// Endpoint settings are the partner's configuration, secrets sealed.
	"app.webhook_endpoint_added":            nil,
	"app.webhook_endpoint_updated":          nil,
	"app.webhook_endpoint_disabled":         nil,
	"app.webhook_endpoint_enabled":          nil,
	"app.webhook_endpoint_removed":          nil,
	"app.webhook_endpoint_secret_issued":    nil,
	"app.webhook_endpoint_secret_activated": nil,
	"app.webhook_test_requested":            nil,
	"app.webhook_endpoint_described":        nil,
	"webhook.replay_requested":              nil,
	"webhook.replay_progressed":             nil,
	"webhook.replay_completed":              nil,
	"webhook.replay_canceled":               nil,
	"app.sandbox_event_triggered":           nil,
	// Developer accounts (the portal): the email is personal; the password
	// hash is sealed with the master key; a mail's recipient and body are
	// personal (a body may hold a reset token).
	"developer.email_claimed":            nil,
	"developer.signed_up":                {"email"},
	"developer.signed_in":                nil,
	"developer.signed_out":               nil,
	"developer.password_reset_requested": nil,
	"developer.password_changed":         nil,
	"developer.reviewed":                 nil,
	"mail.queued":                        {"to", "body"},
	"mail.sent":                          nil,
	"mail.failed":                        nil,
	"mail.keyed":                         nil,
	"mail.keys_started":                  nil,
}

var profilePaths = []string{"profile.name", "profile.nickname", "profile.gender", "profile.avatar",
	"profile.phone", "profile.email", "profile.birth_date"}

var memberPaths = []string{"member.name", "member.relationship", "member.gender", "member.birth_date",
	"member.phone", "member.id_type", "member.id_number", "member.height", "member.weight", "member.blood_type"}

// PersonalFields returns the JSON paths of an event type's personal fields;
// listed is false for a type the registry does not know, which callers must
// treat as entirely personal.
func PersonalFields(eventType string) (paths []string, listed bool) {
	paths, listed = personalFields[eventType]
	return append([]string(nil), paths...), listed
}

// Redact returns an event's data with every personal field's value (other
// than null) replaced by Redacted, keeping the JSON shape, and whether it
// replaced anything. Data of an unlisted type is replaced whole, so nothing
// new can leak before it is classified. Data that holds no personal field
// comes back byte for byte.
func Redact(eventType string, data []byte) ([]byte, bool, error) {
	paths, listed := personalFields[eventType]
	if !listed {
		out, err := json.Marshal(Redacted)
		return out, true, err
	}
	return redactPaths(eventType, data, paths)
}

// webhookPersonalFields lists, per webhook event (the body's "event"),
// the JSON paths of a webhook body that hold personal data, as
// personalFields does for the log: a family group's name, a plugin
// measurement's metadata (the host's free text about the person). The ids a
// body carries (open_user_id, the partner's own ids) are not listed.
var webhookPersonalFields = map[string][]string{
	// User and report bodies name the person by the partner's
	// channel_user_id (often an e-mail or a phone) beside open_user_id.
	"user.profile.updated":       {"channel_user_id"}, // changed_fields names fields, not values
	"user.family_group.created":  {"channel_user_id", "data.name"},
	"user.family_group.deleted":  {"channel_user_id"},
	"user.family_member.created": {"channel_user_id"},
	"user.family_member.updated": {"channel_user_id"},
	"user.family_member.deleted": {"channel_user_id"},
	"health.report.created":      {"channel_user_id"},
	"health.report.updated":      {"channel_user_id"},
	"plugin.report.ready":        {"metadata"},
	"order.shipped":              nil,
	"webhook.test":               nil,
	// Ids the app already has and times: the person is erased.
	"user.erased": nil,
}

// WebhookPersonalFields returns the JSON paths of a webhook body's personal
// fields for the named event; listed is false for an event the list does
// not know, whose body RedactWebhook replaces whole.
func WebhookPersonalFields(event string) (paths []string, listed bool) {
	paths, listed = webhookPersonalFields[event]
	return append([]string(nil), paths...), listed
}

// RedactWebhook is Redact for a webhook body of the named event: its
// personal fields (webhookPersonalFields) read as Redacted, the rest of the
// body unchanged; the body of an unlisted event is replaced whole.
func RedactWebhook(event string, body []byte) ([]byte, bool, error) {
	paths, listed := webhookPersonalFields[event]
	if !listed {
		out, err := json.Marshal(Redacted)
		return out, true, err
	}
	return redactPaths(event, body, paths)
}

// redactPaths replaces the values at paths inside data (see Redact).
func redactPaths(eventType string, data []byte, paths []string) ([]byte, bool, error) {
	if len(paths) == 0 || len(data) == 0 {
		return data, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers outside personal fields keep their text
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, false, fmt.Errorf("catalog: redact %s: %w", eventType, err)
	}
	changed := false
	for _, p := range paths {
		doc = redactPath(doc, strings.Split(p, "."), &changed)
	}
	if !changed {
		return data, false, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, false, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), true, nil
}

// redactPath replaces the value at path inside v.
func redactPath(v any, path []string, changed *bool) any {
	if len(path) == 0 {
		if v == nil {
			return nil
		}
		*changed = true
		return Redacted
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return v
	}
	name, each := strings.CutSuffix(path[0], "[]")
	child, found := obj[name]
	if !found {
		return v
	}
	if !each {
		obj[name] = redactPath(child, path[1:], changed)
		return obj
	}
	if list, ok := child.([]any); ok {
		for i := range list {
			list[i] = redactPath(list[i], path[1:], changed)
		}
	}
	return obj
}

// webhookEvents is the set of webhook event names, each its own key: a
// delivery's event decodes to its string here, not a copy per delivery.
var webhookEvents = func() map[string]string {
	m := make(map[string]string, len(webhookPersonalFields))
	for name := range webhookPersonalFields {
		m[name] = name
	}
	return m
}()

// WebhookEventNames lists the webhook event names partners receive, sorted.
func WebhookEventNames() []string {
	out := make([]string, 0, len(webhookPersonalFields))
	for name := range webhookPersonalFields {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

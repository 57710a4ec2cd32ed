package domain

import (
	"net/url"
	"strconv"
)

// Stream names are derived from an aggregate's identity, so a command finds
// its stream without a lookup and an auditor can read any aggregate's history.

// UserStream names the stream of one channel user and everything they own.
func UserStream(openUserID int64) string {
	var b [len("user-") + 20]byte // one allocation, the string's
	return string(strconv.AppendInt(append(b[:0], "user-"...), openUserID, 10))
}

// The uniqueness claim of (app_id, channel_user_id) is named by
// Pseudonyms.BindingStream (pseudonyms.go): never after the id itself.

// AppStream names the stream of one partner application.
func AppStream(appID int64) string { return "app-" + strconv.FormatInt(appID, 10) }

// IDStream names the stream of id-block reservations of one kind of id.
func IDStream(kind string) string { return "ids-" + kind }

// UploaderStream names the stream of one reporting side's credential.
func UploaderStream(id int64) string { return "uploader-" + strconv.FormatInt(id, 10) }

// BenefitItemStream names the stream of one benefit item.
func BenefitItemStream(id int64) string { return "benefititem-" + strconv.FormatInt(id, 10) }

// ProviderStream names the stream of one service provider.
func ProviderStream(id int64) string { return "provider-" + strconv.FormatInt(id, 10) }

// CardStream names the stream of one benefit card, its uses included.
func CardStream(number string) string { return "card-" + number }

// GoodsStream names the stream of one goods code.
func GoodsStream(code string) string { return "goods-" + url.PathEscape(code) }

// OrderStream names the stream of one order.
func OrderStream(id int64) string { return "order-" + strconv.FormatInt(id, 10) }

// OrderKeyStream names the uniqueness claim of (app_id, third_order_id).
func OrderKeyStream(appID int64, third string) string {
	return "orderkey-" + strconv.FormatInt(appID, 10) + "-" + url.PathEscape(third)
}

// ReportStream names the stream of one health report.
func ReportStream(id int64) string { return "report-" + strconv.FormatInt(id, 10) }

// ReportKeyStream names the idempotency claim of an uploader's report number.
func ReportKeyStream(uploader, requestReportID string) string {
	return "reportkey-" + url.PathEscape(uploader) + "-" + url.PathEscape(requestReportID)
}

// PluginSessionStream names the stream holding a plugin session and its measurement.
func PluginSessionStream(id string) string { return "plugin-session-" + id }

// PluginNonceStream names the single-use claim of a plugin launch nonce.
func PluginNonceStream(appID int64, nonce string) string {
	return "plugin-nonce-" + strconv.FormatInt(appID, 10) + "-" + nonce
}

// DeliveryStream names the stream of one webhook delivery.
func DeliveryStream(id string) string { return "delivery-" + id }

// CardBatchStream names the claim of one card batch of an issuer; key is a
// digest of the request, so a retried batch finds the cards it planned.
func CardBatchStream(issuerAppID int64, key string) string {
	return "cardbatch-" + strconv.FormatInt(issuerAppID, 10) + "-" + key
}

// IdempotencyStream names the record of one app's Idempotency-Key: keyHash is
// the lower-case hex SHA-256 of the key, so any key the partner chooses makes a
// valid, bounded stream name and the key itself never enters the log.
func IdempotencyStream(appID int64, keyHash string) string {
	return "idempotency-" + strconv.FormatInt(appID, 10) + "-" + keyHash
}

// OperatorStream names the stream of one named operator: creation and revocation.
func OperatorStream(id int64) string { return "operator-" + strconv.FormatInt(id, 10) }

// OperatorSessionsStream names the stream of one operator's portal sessions
// (id 0: the bootstrap token's), so a sign-out ends a session on every node.
func OperatorSessionsStream(id int64) string {
	return "operatorsessions-" + strconv.FormatInt(id, 10)
}

// AuditStream names the stream of the audit facts of one actor (an operator's
// reveals, an app's report pulls), so each actor's access history is one stream.
func AuditStream(actor string) string { return "audit-" + url.PathEscape(actor) }

// DeveloperStream names the stream of one developer account of the portal.
func DeveloperStream(id int64) string { return "developer-" + strconv.FormatInt(id, 10) }

// DeveloperEmailStream names the claim of one normalised email address;
// keyedHash is a hex keyed hash of the address, so the name reveals nothing.
func DeveloperEmailStream(keyedHash string) string { return "developeremail-" + keyedHash }

// MailStream names the stream of one outgoing mail: queued, then sent or failed.
func MailStream(id int64) string { return "mail-" + strconv.FormatInt(id, 10) }

// MailKeyStream names the claim of one mail key: the message queued for a
// fact (see catalog.MailKeyed).
func MailKeyStream(key string) string { return "mailkey-" + key }

// MailKeysStartStream names where a kind of keyed mail begins in the log.
func MailKeysStartStream(kind string) string { return "mailkeys-" + kind }

// ReplayStream names the stream of one webhook replay: its request, its
// checkpoints and its end.
func ReplayStream(id int64) string { return "webhookreplay-" + strconv.FormatInt(id, 10) }

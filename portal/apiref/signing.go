package apiref

import "html/template"

// SigningRule is one signature scheme as the partner contract states it,
// quoted word for word (a test checks the quote against the spec), with
// what this platform does where the contract says "not shown".
type SigningRule struct {
	Name   string
	Anchor string
	// Quote is the spec's text, in the spec's Markdown.
	Quote string
	// Platform is how this platform settles the points the spec leaves open.
	Platform string
}

// QuoteHTML is the quote rendered for the page.
func (r SigningRule) QuoteHTML() template.HTML { return Markdown(r.Quote) }

// PlatformHTML is the platform note rendered for the page.
func (r SigningRule) PlatformHTML() template.HTML { return Markdown(r.Platform) }

// SigningRules are the contract's Authentication section, in its order.
var SigningRules = []SigningRule{
	{
		Name:   "Credentials",
		Anchor: "sign-credentials",
		Quote:  "Credentials: appKey (application identifier, may be sent in clear), appSecret (server-side only; signing and profile encryption; never placed in client code), webhookSecret (webhook verification, distinct per endpoint and different from appSecret), plugin app id (for the host manifest), app id (numeric id shown in the credential console). A sandbox set and a production set exist.",
	},
	{
		Name:   "Scheme M (channel users, orders, verify-use)",
		Anchor: "sign-scheme-m",
		Quote: `| Header | Type | Req. | Meaning |
|---|---|---|---|
| X-App-Id | string | yes | app id |
| X-Timestamp | integer | yes | Unix seconds; accepted window plus or minus 5 minutes |
| X-Signature | string | yes | hexadecimal MD5 of the concatenation app_key, timestamp, app_secret, request body (in this order, no separators) |

For GET and DELETE the body is the empty string. The timestamp in the signature is the same value as X-Timestamp. Failure gives 401 with code HTTP_401 (signature wrong, or app does not exist). The signature is computed on the server only.`,
		Platform: "The body is the exact bytes sent (UTF-8), so sign the string you send, not a re-serialised object. A signature is bound to the route of its first accepted use for 300 s: sign each write afresh (see `Signature` under Security schemes below).",
	},
	{
		Name:   "Scheme H (health report pull)",
		Anchor: "sign-scheme-h",
		Quote: `1. signString = METHOD, LF, URI, LF, timestamp, LF, nonce, LF, lower-case hex SHA-256 of the body (LF is a line-feed character). METHOD is upper case. URI is the request path including any query string, identical to the path requested.
2. signature = lower-case hex HMAC-SHA-256 of signString keyed with app_secret.
3. For GET the body is empty and the SHA-256 of the empty string still enters the signature.
4. X-Timestamp must be within 300 seconds of server time. Missing key, wrong signature or stale timestamp gives 401 (MISSING_APP_KEY or INVALID_SIGNATURE).
5. The nonce value used in signString when X-Nonce is omitted: not shown.`,
		Platform: "Headers: `X-App-Key`, `X-Timestamp`, `X-Nonce` (optional, at most 128 characters) and `X-Signature`. When `X-Nonce` is omitted the nonce line of signString is empty (the line stays). A nonce is accepted once per app within the window; without a nonce the signature itself is the replay key. The sandbox mock call is signed with scheme H too.",
	},
	{
		Name:   "Plugin launch signature",
		Anchor: "sign-plugin-launch",
		Quote:  "sign = lower-case hex HMAC-SHA-256 keyed with appSecret over the text appKey, thirdUserId, timestamp, nonce joined by the vertical bar character. The timestamp is 10-digit Unix seconds, not milliseconds. The userProfile is encrypted with a key derived from appSecret; cipher, key derivation and plaintext layout: not shown.",
	},
	{
		Name:     "Webhook signature (both webhook families)",
		Anchor:   "sign-webhook",
		Quote:    "signature = lower-case hex HMAC-SHA-256 keyed with webhookSecret over the text X-Webhook-Timestamp, a full stop, then the raw request body bytes exactly as received (never re-serialised). Receivers compare in constant time and reject timestamps more than 300 seconds from current time. The daily-report read uses a bearer token; how that token is obtained: not shown. The signature rule of the sandbox mock call: not shown.",
		Platform: "Each webhook endpoint has its own secret. A rotated secret is pending and signs nothing until it is activated, so a receiver can be given the new secret first.",
	},
}

// Package measureplugin builds and checks the launch parameters of the device-measurement
// plugin. Host servers use it to produce what their mini-program front end needs;
// the platform uses the same code to verify and decrypt it. This comment is the
// integration guide for hosts, including hosts that re-implement it in another
// language: the construction below is complete, and testdata/vectors.json holds
// published vectors to check an implementation against.
//
// # Flow
//
//  1. The host front end calls an endpoint on the host server (path chosen by the
//     host) with a JSON body {thirdUserId, deviceKey, measureMode} (HostRequest).
//  2. The host server looks up the user's profile and calls NewLaunch with its
//     appKey and appSecret. appSecret stays on the server: it signs the launch and
//     derives the profile key, and must never appear in front-end code.
//  3. The server answers {"code":0,"data":{appKey, thirdUserId, userProfile,
//     timestamp, nonce, sign, deviceKey, measureMode}} (HostResponse).
//  4. The front end opens plugin://platform-measure/bind with those values as query
//     parameters (Launch.URL gives the exact string). env=sandbox is appended only
//     for the sandbox credential set and must be absent in production.
//  5. The plugin hands back the result under the local storage key
//     platform_measure_result: {status: success|cancel|other=failure, measureId,
//     errorCode}. Read it once and remove it.
//  6. The platform later sends plugin.report.ready to the app's webhook URL;
//     measurement_no equals measureId, third_user_id is the launch's thirdUserId,
//     metadata is Profile.Metadata and report_type is ReportType(deviceKey,
//     measureMode). platform_user_id is set only when a phone was given and binding
//     completed.
//
// The manifest of the host mini-program declares the plugin under the alias
// platform-measure, version latest, with the plugin app id issued by the platform.
//
// # Devices and measure modes
//
// The spec lists four devices and shows only the mode BP; the other modes are this
// package's choice and are the only values it accepts:
//
//	deviceKey                  measureMode  report_type
//	HOME_MULTI_BIO_MONITOR     BP           blood_pressure
//	HOME_MULTI_BIO_MONITOR     BG           blood_glucose
//	HOME_SPO2_RING             SPO2         spo2
//	HEARTLOG_ECG_RECORDER      ECG          ecg
//	BODY_COMPOSITION_ANALYSIS  BCA          bca
//
// The sandbox mock (POST {base_url}/sandbox/mock/measure) takes the same deviceKey
// and measureMode values; its signature rule is not in the spec, so this package
// offers none for it.
//
// # Launch signature
//
//	sign = lower-case hex( HMAC-SHA256( key = appSecret,
//	                                    msg = appKey "|" thirdUserId "|" timestamp "|" nonce ) )
//
// All strings are taken as their UTF-8 bytes, unescaped (thirdUserId is signed as
// the user id itself, not its URL-encoded form). timestamp is 10-digit Unix seconds
// (never milliseconds) and is accepted within ±300 s of the platform clock, edges
// included. nonce is 1..64 bytes without '|' (NewLaunch uses 16 random bytes in
// hex); appKey never contains '|'. With those two rules the signed text splits back
// into its fields in only one way, whatever thirdUserId contains. The platform
// compares in constant time and should reject a nonce it has already seen within
// 2 × 300 s.
//
// # userProfile encryption (v1)
//
//	key        = HKDF-SHA256(secret = appSecret bytes,
//	                         salt   = "partner-open-platform/plugin",
//	                         info   = "userProfile v1", length = 32)   (RFC 5869)
//	iv         = 12 random bytes, fresh for every encryption
//	aad        = appKey "|" thirdUserId
//	sealed     = AES-256-GCM(key, iv, plaintext, aad) = ciphertext || 16-byte tag
//	userProfile = standard base64 with padding (RFC 4648 §4) of iv || sealed
//
// The associated data means a userProfile decrypts only for the appKey and
// thirdUserId it was made for: it cannot be moved to another user or app. A wrong
// appSecret, another user or app, or any changed byte all fail the same way
// (ErrProfileAuth).
//
// The plaintext is a UTF-8 JSON object with these optional members (omit what you
// do not have; unknown members are ignored):
//
//	phone       string  mainland mobile, ^1[3-9][0-9]{9}$ (lets the platform bind platform_user_id)
//	gender      string  male | female | unknown
//	birth_date  string  Y-m-d, not in the future, not before 1900-01-01
//	height      int     centimetres, 30..300
//	weight      int     kilograms × 100, 100..50000 (6550 = 65.50 kg)
//	name        string  display name
//	metadata    string  any string; echoed as metadata in plugin.report.ready
//
// BODY_COMPOSITION_ANALYSIS requires height, gender and birth_date. Profile.Validate
// checks all of this and names every offending field in a FieldError.
//
// # URL encoding
//
// Launch.URL writes the parameters in the fixed order appKey, thirdUserId,
// userProfile, timestamp, nonce, sign, deviceKey, measureMode[, env=sandbox], each
// value percent-encoded like url.QueryEscape but with a space as %20, so that both
// JavaScript's decodeURIComponent and form decoding return the original value.
// userProfile must be encoded too: its base64 '+', '/' and '=' are significant.
package measureplugin

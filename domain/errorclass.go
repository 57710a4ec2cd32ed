package domain

import "strings"

// Delivery error classes: the stable, documented reason a webhook attempt
// failed. Partners see only the class (raw transport text can carry
// certificate details, resolver messages and internal addresses);
// operators see the class and the detail.
const (
	// ErrorClassTimeout: no answer within the time limit (connect, TLS handshake or response).
	ErrorClassTimeout = "timeout"
	// ErrorClassConnectionRefused: the receiver's host refused the TCP connection.
	ErrorClassConnectionRefused = "connection_refused"
	// ErrorClassConnection: the connection failed otherwise (reset, closed early, unreachable).
	ErrorClassConnection = "connection_error"
	// ErrorClassDNS: the webhook URL's host name did not resolve.
	ErrorClassDNS = "dns_error"
	// ErrorClassTLS: the TLS handshake failed (untrusted or invalid certificate, protocol error).
	ErrorClassTLS = "tls_error"
	// ErrorClassRefusedTarget: the URL resolves to an address the platform never delivers to.
	ErrorClassRefusedTarget = "refused_target"
	// ErrorClassInvalidURL: the webhook URL cannot be used for a request.
	ErrorClassInvalidURL = "invalid_url"
	// ErrorClassNoURL: the app had no webhook URL when the attempt was due.
	ErrorClassNoURL = "no_webhook_url"
	// ErrorClassRedirect: the receiver answered 3xx; redirects are not followed.
	ErrorClassRedirect = "redirect"
	// ErrorClassHTTPStatus: the receiver answered a status other than 2xx and 3xx.
	ErrorClassHTTPStatus = "http_status"
	// ErrorClassOther: any other failure.
	ErrorClassOther = "other"
)

// ErrorClassMessages is the fixed text partners see for each class, in
// place of the transport's own words.
var ErrorClassMessages = map[string]string{
	ErrorClassTimeout:           "the receiver did not answer within the time limit",
	ErrorClassConnectionRefused: "the receiver refused the connection",
	ErrorClassConnection:        "the connection to the receiver failed",
	ErrorClassDNS:               "the webhook URL's host name could not be resolved",
	ErrorClassTLS:               "the TLS handshake with the receiver failed (check its certificate)",
	ErrorClassRefusedTarget:     "the webhook URL resolves to an address the platform does not deliver to",
	ErrorClassInvalidURL:        "the webhook URL is not valid",
	ErrorClassNoURL:             "the app has no webhook URL configured",
	ErrorClassRedirect:          "the receiver answered with a redirect, which is not followed",
	ErrorClassHTTPStatus:        "the receiver answered with a non-2xx status",
	ErrorClassOther:             "the attempt failed",
}

// ClassifyDeliveryFailure derives the class of an attempt from what the
// log recorded before classes were: the error text and the status code
// ("" for a 2xx answer without error). The dispatcher classifies live
// errors by their type; this reads Go's error wording, which is stable.
func ClassifyDeliveryFailure(detail string, statusCode int) string {
	if detail == "" {
		switch {
		case statusCode >= 200 && statusCode < 300:
			return ""
		case statusCode >= 300 && statusCode < 400:
			return ErrorClassRedirect
		case statusCode != 0:
			return ErrorClassHTTPStatus
		}
		return ErrorClassOther
	}
	d := strings.ToLower(detail)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(d, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("webhook target refused"):
		return ErrorClassRefusedTarget
	case has("no webhook url configured"):
		return ErrorClassNoURL
	case has("invalid webhook url"):
		return ErrorClassInvalidURL
	case has("no such host", "server misbehaving", "dns", "lookup "):
		return ErrorClassDNS
	case has("x509:", "tls:", "certificate", "handshake failure"):
		if has("timeout") {
			return ErrorClassTimeout
		}
		return ErrorClassTLS
	case has("timeout", "deadline exceeded", "timed out"):
		return ErrorClassTimeout
	case has("connection refused"):
		return ErrorClassConnectionRefused
	case has("connection reset", "broken pipe", "eof", "network is unreachable", "no route to host", "connection closed"):
		return ErrorClassConnection
	}
	return ErrorClassOther
}

package domain

import "testing"

// Attempts recorded before classes existed get their class from Go's
// error wording and the status code.
func TestClassifyDeliveryFailureFromRecordedText(t *testing.T) {
	for _, c := range []struct {
		detail string
		status int
		want   string
	}{
		{"", 200, ""},
		{"", 204, ""},
		{"", 301, ErrorClassRedirect},
		{"", 404, ErrorClassHTTPStatus},
		{"", 0, ErrorClassOther},
		{`Post "https://hook.example.com/h": tls: failed to verify certificate: x509: certificate signed by unknown authority`, 0, ErrorClassTLS},
		{`Post "https://h.example.com/": x509: certificate is valid for a.example, not h.example.com`, 0, ErrorClassTLS},
		{`Post "https://h.example.com/": net/http: TLS handshake timeout`, 0, ErrorClassTimeout},
		{`Post "https://x.invalid/": dial tcp: lookup x.invalid on 10.0.0.2:53: no such host`, 0, ErrorClassDNS},
		{`Post "https://h.example.com/": dial tcp 203.0.113.9:443: connect: connection refused`, 0, ErrorClassConnectionRefused},
		{`Post "https://h.example.com/": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`, 0, ErrorClassTimeout},
		{`Post "https://h.example.com/": dial tcp 203.0.113.9:443: i/o timeout`, 0, ErrorClassTimeout},
		{`Post "https://h.example.com/": read tcp 10.0.0.1:5->203.0.113.9:443: read: connection reset by peer`, 0, ErrorClassConnection},
		{`Post "https://h.example.com/": EOF`, 0, ErrorClassConnection},
		{`Post "https://h.example.com/": dial tcp 10.0.0.7:443: webhook target refused: 10.0.0.7:443 is private`, 0, ErrorClassRefusedTarget},
		{"invalid webhook URL: parse \"::\": missing protocol scheme", 0, ErrorClassInvalidURL},
		{"the app has no webhook URL configured", 0, ErrorClassNoURL},
		{"something nobody has seen", 0, ErrorClassOther},
	} {
		if got := ClassifyDeliveryFailure(c.detail, c.status); got != c.want {
			t.Errorf("ClassifyDeliveryFailure(%q, %d) = %q, want %q", c.detail, c.status, got, c.want)
		}
		if c.want != "" && ErrorClassMessages[c.want] == "" {
			t.Errorf("class %q has no message", c.want)
		}
	}
}

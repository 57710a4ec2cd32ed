package webhooks

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/webhooks/targets"
)

// classify names the stable class of a failed POST from the error's type,
// so that partners can be shown the class and never the raw text; the
// text itself is recorded for operators.
func classify(err error) string {
	var dnsErr *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	var invalidCert x509.CertificateInvalidError
	var hostErr x509.HostnameError
	var verifyErr *tls.CertificateVerificationError
	var recordErr tls.RecordHeaderError
	var alertErr tls.AlertError
	var netErr net.Error
	switch {
	case errors.Is(err, targets.ErrRefused):
		return domain.ErrorClassRefusedTarget
	case errors.As(err, &dnsErr):
		return domain.ErrorClassDNS
	case errors.As(err, &verifyErr), errors.As(err, &unknownCA), errors.As(err, &invalidCert),
		errors.As(err, &hostErr), errors.As(err, &recordErr), errors.As(err, &alertErr):
		return domain.ErrorClassTLS
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return domain.ErrorClassTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return domain.ErrorClassConnectionRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return domain.ErrorClassConnection
	}
	// Errors that lost their type on the way (wrapped as text by a
	// transport) still carry Go's wording.
	return domain.ClassifyDeliveryFailure(err.Error(), 0)
}

// Package smtp is the SMTP adapter of the portal's Mailer port: it sends a
// plain-text message through the server PLATFORM_SMTP_URL names
// (smtp://user:password@host:port), upgrading with STARTTLS whenever the
// server offers it, and authenticating (PLAIN) only over TLS or to a
// loopback server.
package smtp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/smtp"
	"net/url"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/portal/mail"
)

// Mailer sends through one SMTP server.
type Mailer struct {
	Addr     string // host:port
	Host     string
	Username string
	Password string
	// TLS configures STARTTLS (nil: verify the server's name against the
	// system roots).
	TLS *tls.Config
	// RequireTLS refuses to send when the server offers no STARTTLS.
	RequireTLS bool
}

// Parse reads smtp://user:pass@host:port (port default 25; smtps is not
// supported: use STARTTLS on 587). The query ?tls=required refuses a server
// without STARTTLS.
func Parse(raw string) (*Mailer, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "smtp" || u.Hostname() == "" {
		return nil, errors.New("smtp: want smtp://[user:password@]host[:port]")
	}
	port := u.Port()
	if port == "" {
		port = "25"
	}
	m := &Mailer{Addr: net.JoinHostPort(u.Hostname(), port), Host: u.Hostname(), RequireTLS: u.Query().Get("tls") == "required"}
	if u.User != nil {
		m.Username = u.User.Username()
		m.Password, _ = u.User.Password()
	}
	return m, nil
}

func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
}

// Send delivers one message.
func (m *Mailer) Send(ctx context.Context, msg mail.Message) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", m.Addr)
	if err != nil {
		return fmt.Errorf("smtp: connect %s: %w", m.Addr, err)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Minute)
	}
	_ = conn.SetDeadline(deadline)
	c, err := smtp.NewClient(conn, m.Host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("smtp: greeting: %w", err)
	}
	defer c.Close()
	if err := c.Hello("localhost"); err != nil {
		return fmt.Errorf("smtp: hello: %w", err)
	}
	if ok, _ := c.Extension("STARTTLS"); ok {
		cfg := m.TLS
		if cfg == nil {
			cfg = &tls.Config{ServerName: m.Host, MinVersion: tls.VersionTLS12}
		}
		if err := c.StartTLS(cfg); err != nil {
			return fmt.Errorf("smtp: starttls: %w", err)
		}
	} else if m.RequireTLS {
		return errors.New("smtp: the server offers no STARTTLS and tls=required")
	}
	if m.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", m.Username, m.Password, m.Host)); err != nil {
			return fmt.Errorf("smtp: auth: %w", err)
		}
	}
	from, to := clean(msg.From), clean(msg.To)
	if err := c.Mail(from); err != nil {
		return fmt.Errorf("smtp: MAIL FROM: %w", err)
	}
	if err := c.Rcpt(to); err != nil {
		return fmt.Errorf("smtp: RCPT TO: %w", err)
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("smtp: DATA: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n",
		from, to, mime.QEncoding.Encode("utf-8", clean(msg.Subject)), time.Now().UTC().Format(time.RFC1123Z))
	b.WriteString(strings.ReplaceAll(strings.ReplaceAll(msg.Body, "\r\n", "\n"), "\n", "\r\n"))
	if _, err := w.Write([]byte(b.String())); err != nil {
		return fmt.Errorf("smtp: body: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("smtp: end of data: %w", err)
	}
	return c.Quit()
}

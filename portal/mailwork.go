package portal

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Links in the portal's mail are built from Config.BaseURL only, never
// from a request's Host header (which a client chooses): a link to
// reset a password must lead to the platform whatever the request that
// asked for it claimed to be addressed to.

// checkBaseURL accepts an http(s) origin without path, query or fragment.
func checkBaseURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.Trim(u.Path, "/") != "" ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil || u.Opaque != "" {
		return "", fmt.Errorf("portal: base URL %q is not an http(s) origin", s)
	}
	return strings.TrimSuffix(s, "/"), nil
}

// link is an absolute URL of a portal page for a mail.
func (s *Server) link(path string, query url.Values) string {
	l := s.cfg.BaseURL + path
	if len(query) > 0 {
		l += "?" + query.Encode()
	}
	return l
}

// resetMailBody is the part of a mail that hands out a reset link.
func (s *Server) resetLink(token string) string {
	return s.link("/portal/password/reset", url.Values{"token": {token}})
}

// mailQueueSize bounds the mail work waiting for the background workers;
// beyond it a request is answered 429, whatever the address it names.
const mailQueueSize = 256

// mailJobTimeout bounds one piece of background mail work.
const mailJobTimeout = 30 * time.Second

// mailJobDelay is how long a job waits after its page handed it over, so
// the page's answer is written before the work (which differs between a
// known and an unknown address) competes with it for the CPU.
const mailJobDelay = 25 * time.Millisecond

// errMailBusy: the background mail work is full; the page asks the visitor to retry.
var errMailBusy = errors.New("portal: mail work queue is full")

// later hands work to the background mail workers (RunMailWork), so the
// page answers before, and without, knowing whether the work found an
// account: a known and an unknown address take the same time to answer.
func (s *Server) later(what string, job func(ctx context.Context) error) error {
	select {
	case s.mailJobs <- mailJob{what: what, run: job, at: time.Now()}:
		return nil
	default:
		return errMailBusy
	}
}

type mailJob struct {
	what string
	run  func(ctx context.Context) error
	at   time.Time // handed over
}

// RunMailWork runs the mail work pages handed over (password reset
// requests) until ctx ends; the node runs it in the background. A job
// started finishes even when ctx ends meanwhile (bounded by
// mailJobTimeout), so a stop never leaves half a reset behind.
func (s *Server) RunMailWork(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case job := <-s.mailJobs:
			if wait := mailJobDelay - time.Since(job.at); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
				}
			}
			jctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), mailJobTimeout)
			if err := job.run(jctx); err != nil {
				s.Log.Error("portal: mail work failed", "work", job.what, "err", err)
			}
			cancel()
		}
	}
}

// queueMail records a message in the outbox (the SMTP sender, when
// configured, sends it from there).
func (s *Server) queueMail(ctx context.Context, devID int64, to, subject, body, actor, requestID string) error {
	// Background work: nobody waits for the outbox to show it.
	_, _, err := s.Mail.Queue(ctx, catalog.MailQueued{DeveloperID: devID, To: to, Subject: subject, Body: body},
		commands.Meta{Actor: actor, RequestID: requestID})
	return err
}

func resetTTLMinutes() int { return int(commands.ResetTokenTTL.Minutes()) }

// sendReset records a reset token for the account holding email, if any,
// and mails it the link; an unknown address does nothing (and nobody
// learns which it was: this runs after the page answered).
func (s *Server) sendReset(ctx context.Context, email, requestID string) error {
	token, devID, err := s.Developers.RequestReset(ctx, email, requestID)
	if err != nil || token == "" {
		return err
	}
	norm, _ := commands.NormaliseEmail(email)
	body := "Someone asked to reset the password of your developer account.\n\n" +
		"Open this link within " + fmt.Sprint(resetTTLMinutes()) + " minutes to choose a new password (it works once):\n\n" +
		s.resetLink(token) + "\n\nIf it was not you, ignore this message: your password stays as it is.\n"
	return s.queueMail(ctx, devID, norm, "Reset your developer portal password", body, "portal:password-reset", requestID)
}

// sendWelcome mails a new account where to sign in.
func (s *Server) sendWelcome(ctx context.Context, devID int64, email, requestID string) error {
	body := "Welcome to the developer portal. Your developer account for this address is created and pending qualification review.\n\n" +
		"Sign in here:\n\n" + s.link("/portal/signin", nil) + "\n\n" +
		"If it was not you who signed up, reset the password from the sign-in page and tell us.\n"
	return s.queueMail(ctx, devID, email, "Your developer portal account", body, "portal:sign-up", requestID)
}

// sendSignUpAttempt tells the owner of an address that someone tried to
// create a second account with it, with a reset link in case the owner
// forgot the password; nothing else changes.
func (s *Server) sendSignUpAttempt(ctx context.Context, email, requestID string) error {
	token, devID, err := s.Developers.RequestReset(ctx, email, requestID)
	if err != nil || token == "" {
		return err
	}
	body := "Someone tried to create a developer account with this address, which already has one. Nothing was changed.\n\n" +
		"If it was you, sign in here:\n\n" + s.link("/portal/signin", nil) + "\n\n" +
		"or, if you forgot your password, open this link within " + fmt.Sprint(resetTTLMinutes()) + " minutes to choose a new one (it works once):\n\n" +
		s.resetLink(token) + "\n\nIf it was not you, ignore this message: your account stays as it is.\n"
	return s.queueMail(ctx, devID, email, "Someone tried to sign up with your address", body, "portal:sign-up", requestID)
}

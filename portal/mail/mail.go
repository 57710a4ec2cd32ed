// Package mail sends the portal's queued mail: a Sender follows the outbox
// (messages recorded as events, commands.Mail) and hands each pending
// message to a Mailer, recording every attempt's outcome as an event, so a
// message is never silently dropped: it is sent, or retried, or marked
// failed after the last attempt, and stays readable in the operator's
// outbox either way. Without a Mailer (no SMTP server configured) no Sender
// runs and messages wait in the outbox for an operator.
package mail

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/projections/directory"
)

// Message is one mail as a Mailer sends it.
type Message struct {
	From    string
	To      string
	Subject string
	Body    string // plain text
}

// Mailer sends one message; an error means it was not accepted. The SMTP
// adapter is mail/smtp.
type Mailer interface {
	Send(ctx context.Context, m Message) error
}

// Outbox lists the messages still to send (directory.Developers).
type Outbox interface {
	Outbox(pending bool) []directory.OutboxMail
}

// Recorder records an attempt's outcome (commands.Mail.Outcome).
type Recorder interface {
	Outcome(ctx context.Context, id int64, attempt int, failure string, final bool) error
}

// DefaultRetries are the waits before each retry of a failed message;
// after the last one fails the message is marked failed.
var DefaultRetries = []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute, time.Hour}

// Sender sends pending mail; run one at a time across nodes (a lease), so
// a message is not sent twice by two nodes.
type Sender struct {
	Mailer   Mailer
	From     string
	Outbox   Outbox
	Recorder Recorder
	Retries  []time.Duration // nil: DefaultRetries
	Poll     time.Duration   // how often to look for work (default 1 s)
	Now      func() time.Time
	Log      *slog.Logger

	mu   sync.Mutex
	next map[int64]time.Time // earliest next attempt of a failed message
	// done are messages this sender finished (sent or given up) that the
	// outbox, which follows the log asynchronously, may still list as
	// pending for a moment: they are not sent again.
	done map[int64]bool
}

// Run sends until ctx ends.
func (s *Sender) Run(ctx context.Context) error {
	poll := s.Poll
	if poll <= 0 {
		poll = time.Second
	}
	for {
		s.SendPending(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
	}
}

// SendPending makes one attempt at every message that is due.
func (s *Sender) SendPending(ctx context.Context) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	retries := s.Retries
	if retries == nil {
		retries = DefaultRetries
	}
	log := s.Log
	if log == nil {
		log = slog.Default()
	}
	s.mu.Lock()
	if s.next == nil {
		s.next, s.done = map[int64]time.Time{}, map[int64]bool{}
	}
	s.mu.Unlock()
	pending := s.Outbox.Outbox(true)
	s.mu.Lock()
	stillListed := make(map[int64]bool, len(pending))
	for _, m := range pending {
		stillListed[m.MailID] = true
	}
	for id := range s.done {
		if !stillListed[id] {
			delete(s.done, id) // the outbox caught up
		}
	}
	s.mu.Unlock()
	for _, m := range pending {
		if ctx.Err() != nil {
			return
		}
		s.mu.Lock()
		due, waiting := s.next[m.MailID]
		finished := s.done[m.MailID]
		s.mu.Unlock()
		if finished || (waiting && now().Before(due)) {
			continue
		}
		attempt := m.Attempts + 1
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := s.Mailer.Send(sctx, Message{From: s.From, To: m.To, Subject: m.Subject, Body: m.Body})
		cancel()
		failure, final := "", false
		if err != nil {
			failure = err.Error()
			final = attempt > len(retries)
			if !final {
				s.mu.Lock()
				s.next[m.MailID] = now().Add(retries[attempt-1])
				s.mu.Unlock()
			}
			// The message id only: recipient and body are personal and
			// may hold a reset link.
			log.Warn("mail not sent", "mail_id", m.MailID, "attempt", attempt, "final", final, "err", err)
		}
		if rerr := s.Recorder.Outcome(ctx, m.MailID, attempt, failure, final); rerr != nil {
			log.Error("mail outcome not recorded", "mail_id", m.MailID, "err", rerr)
			continue
		}
		if err == nil || final {
			s.mu.Lock()
			delete(s.next, m.MailID)
			s.done[m.MailID] = true
			s.mu.Unlock()
		}
	}
}

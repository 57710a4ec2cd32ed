package mail

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/projections/directory"
)

type fakeOutbox struct {
	mu   sync.Mutex
	mail map[int64]*directory.OutboxMail
}

func (f *fakeOutbox) Outbox(pending bool) []directory.OutboxMail {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []directory.OutboxMail
	for _, m := range f.mail {
		if !pending || m.Status == directory.MailQueued || m.Status == directory.MailRetrying {
			out = append(out, *m)
		}
	}
	return out
}

// Outcome applies the outcome the way the directory would from its event.
func (f *fakeOutbox) Outcome(_ context.Context, id int64, attempt int, failure string, final bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.mail[id]
	m.Attempts = attempt
	switch {
	case failure == "":
		m.Status = directory.MailSent
	case final:
		m.Status, m.LastError = directory.MailFailed, failure
	default:
		m.Status, m.LastError = directory.MailRetrying, failure
	}
	return nil
}

type flakyMailer struct {
	mu    sync.Mutex
	fails int // fail this many sends, then succeed
	sent  []Message
	tries int
}

func (m *flakyMailer) Send(_ context.Context, msg Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tries++
	if m.fails > 0 {
		m.fails--
		return errors.New("421 busy")
	}
	m.sent = append(m.sent, msg)
	return nil
}

func TestSenderRetriesOnScheduleThenGivesUp(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	box := &fakeOutbox{mail: map[int64]*directory.OutboxMail{
		1: {MailID: 1, To: "a@example.com", Status: directory.MailQueued},
		2: {MailID: 2, To: "b@example.com", Status: directory.MailQueued},
	}}
	mailer := &flakyMailer{fails: 100}
	s := &Sender{Mailer: mailer, From: "p@example.com", Outbox: box, Recorder: box, Retries: []time.Duration{time.Minute, time.Hour},
		Now: func() time.Time { return now }}
	s.SendPending(context.Background()) // attempt 1 of each
	s.SendPending(context.Background()) // not due: nothing
	if mailer.tries != 2 {
		t.Fatalf("tries after two passes within the first wait: %d", mailer.tries)
	}
	now = now.Add(time.Minute)
	s.SendPending(context.Background()) // attempt 2
	now = now.Add(59 * time.Minute)
	s.SendPending(context.Background()) // not due yet
	if mailer.tries != 4 {
		t.Fatalf("tries: %d", mailer.tries)
	}
	now = now.Add(time.Minute)
	s.SendPending(context.Background()) // attempt 3: final
	now = now.Add(24 * time.Hour)
	s.SendPending(context.Background()) // given up: nothing
	if mailer.tries != 6 {
		t.Fatalf("tries after giving up: %d", mailer.tries)
	}
	for _, m := range box.Outbox(false) {
		if m.Status != directory.MailFailed || m.Attempts != 3 || m.LastError != "421 busy" {
			t.Fatalf("mail %d: %+v", m.MailID, m)
		}
	}
}

func TestSenderSendsOnceAfterARecoveredFailure(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	box := &fakeOutbox{mail: map[int64]*directory.OutboxMail{7: {MailID: 7, To: "a@example.com", Subject: "s", Body: "b", Status: directory.MailQueued}}}
	mailer := &flakyMailer{fails: 1}
	s := &Sender{Mailer: mailer, From: "p@example.com", Outbox: box, Recorder: box, Retries: []time.Duration{time.Second}, Now: func() time.Time { return now }}
	s.SendPending(context.Background())
	now = now.Add(time.Second)
	s.SendPending(context.Background())
	s.SendPending(context.Background())
	if len(mailer.sent) != 1 || mailer.sent[0].From != "p@example.com" || mailer.sent[0].To != "a@example.com" {
		t.Fatalf("sent %+v", mailer.sent)
	}
	if m := box.Outbox(false)[0]; m.Status != directory.MailSent || m.Attempts != 2 {
		t.Fatalf("mail %+v", m)
	}
}

// laggingOutbox never applies outcomes: the outbox behind the log.
type laggingOutbox struct{ fakeOutbox }

func (l *laggingOutbox) Outcome(context.Context, int64, int, string, bool) error { return nil }

func TestSenderDoesNotResendWhileTheOutboxLags(t *testing.T) {
	box := &laggingOutbox{fakeOutbox{mail: map[int64]*directory.OutboxMail{3: {MailID: 3, To: "a@example.com", Status: directory.MailQueued}}}}
	mailer := &flakyMailer{}
	s := &Sender{Mailer: mailer, Outbox: box, Recorder: box}
	for range 3 {
		s.SendPending(context.Background())
	}
	if len(mailer.sent) != 1 {
		t.Fatalf("sent %d times while the outbox still listed it", len(mailer.sent))
	}
}

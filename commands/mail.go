package commands

import (
	"context"
	"strings"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Mail records outgoing mail as events (domain.MailStream), so a message
// is never silently dropped: it is queued before anything tries to send it,
// and every attempt's outcome is a fact an operator can read in the outbox.
type Mail struct {
	streams
	ids *Allocator
}

// NewMail builds the mail commands.
func NewMail(store events.Store, reg *events.Registry, ids *Allocator) *Mail {
	return &Mail{streams: streams{store, reg}, ids: ids}
}

// MailState is one message's state as its stream decides it.
type MailState struct {
	ID       int64
	Sent     bool
	Final    bool // gave up after the last attempt
	Attempts int
}

func (m *MailState) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.MailQueued:
		m.ID = p.MailID
	case *catalog.MailSent:
		m.Sent = true
	case *catalog.MailFailed:
		m.Attempts = max(m.Attempts, p.Attempt)
		m.Final = m.Final || p.Final
	}
}

// Queue records a message to send; it returns the message's id.
func (m *Mail) Queue(ctx context.Context, msg catalog.MailQueued, meta Meta) (int64, events.Position, error) {
	id, err := m.ids.Next(ctx, KindMail)
	if err != nil {
		return 0, events.Position{}, err
	}
	msg.MailID = id
	res, err := m.append(ctx, domain.MailStream(id), 0, meta, msg)
	return id, res.Position, err
}

// Outcome records one attempt's result: sent when failure is "", else the
// failure (final: no more attempts). An outcome for a message already sent
// or given up appends nothing, so two senders racing record one outcome.
func (m *Mail) Outcome(ctx context.Context, id int64, attempt int, failure string, final bool) error {
	var st MailState
	version, _, err := m.load(ctx, domain.MailStream(id), st.apply)
	if err != nil {
		return err
	}
	if st.ID == 0 {
		return domain.ErrMailNotFound
	}
	if st.Sent || st.Final || attempt <= st.Attempts {
		return nil
	}
	var p events.Payload = catalog.MailSent{MailID: id}
	if failure != "" {
		if len(failure) > 300 {
			failure = failure[:300]
		}
		p = catalog.MailFailed{MailID: id, Attempt: attempt, Error: strings.ToValidUTF8(failure, "?"), Final: final}
	}
	_, err = m.append(ctx, domain.MailStream(id), version, Meta{Actor: "platform:mailer"}, p)
	if events.IsConflict(err) {
		return nil // another sender recorded this message's outcome first
	}
	return err
}

// QueueOnce queues msg as the one message of key (a fact's event id): the
// first call claims the key and queues the message in one append where the
// store can; every later call, on any node, finds the claim and queues
// nothing. queued says this call queued it. A claim whose message is
// missing (a crash between two appends on a store without multi-stream
// appends) gets its message now, under the id the claim holds.
func (m *Mail) QueueOnce(ctx context.Context, key string, msg catalog.MailQueued, meta Meta) (id int64, queued bool, err error) {
	for range 2 {
		keyStream := domain.MailKeyStream(key)
		var claimed int64
		version, _, err := m.load(ctx, keyStream, func(env events.Envelope) {
			if p, ok := env.Payload.(*catalog.MailKeyed); ok {
				claimed = p.MailID
			}
		})
		if err != nil {
			return 0, false, err
		}
		if version > 0 {
			msg.MailID = claimed
			_, err := m.append(ctx, domain.MailStream(claimed), 0, meta, msg)
			if events.IsConflict(err) {
				return claimed, false, nil // queued before
			}
			return claimed, err == nil, err
		}
		id, err := m.ids.Next(ctx, KindMail)
		if err != nil {
			return 0, false, err
		}
		msg.MailID = id
		_, err = m.appendAll(ctx, meta,
			decided{stream: keyStream, ps: []events.Payload{catalog.MailKeyed{Key: key, MailID: id}}},
			decided{stream: domain.MailStream(id), ps: []events.Payload{msg}})
		if !events.IsConflict(err) {
			return id, err == nil, err
		}
		// Another node claimed the key meanwhile: its claim decides.
	}
	return 0, false, domain.ErrContention
}

// KeysStart is where keyed mails of kind begin in the log: the first call
// (on any node) records head, every later one reads what the first recorded.
// Facts at or before it were in the log before their mails came from them.
func (m *Mail) KeysStart(ctx context.Context, kind string, head events.Position) (events.Position, error) {
	stream := domain.MailKeysStartStream(kind)
	for range 2 {
		var after events.Position
		version, _, err := m.load(ctx, stream, func(env events.Envelope) {
			if p, ok := env.Payload.(*catalog.MailKeysStarted); ok {
				after = p.After
			}
		})
		if err != nil || version > 0 {
			return after, err
		}
		_, err = m.append(ctx, stream, 0, Meta{Actor: "platform:mailer"}, catalog.MailKeysStarted{Kind: kind, After: head})
		if !events.IsConflict(err) {
			return head, err
		}
	}
	return events.Position{}, domain.ErrContention
}

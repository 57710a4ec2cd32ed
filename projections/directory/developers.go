package directory

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// DeveloperAccount is a developer account as the portal lists it.
type DeveloperAccount struct {
	DeveloperID int64
	Email       string
	Status      string
	Reason      string
	SignedUpAt  time.Time
	ReviewedAt  *time.Time
	ReviewedBy  string
}

// OutboxMail is one outgoing message and what became of it.
type OutboxMail struct {
	MailID      int64
	DeveloperID int64
	To          string
	Subject     string
	Body        string
	QueuedAt    time.Time
	Status      string // queued, sent, retrying, failed
	Attempts    int
	LastError   string
}

// Mail statuses in the outbox.
const (
	MailQueued   = "queued"
	MailSent     = "sent"
	MailRetrying = "retrying"
	MailFailed   = "failed"
)

// Developers is the in-memory directory of developer accounts and the
// mail outbox every node keeps (like the operator directory): accounts and
// mails are few, and the operator pages list them; the write side never
// reads it (uniqueness and sessions are decided on streams).
type Developers struct {
	mu   sync.RWMutex
	pos  events.Position
	devs map[int64]*DeveloperAccount
	mail map[int64]*OutboxMail
}

// NewDevelopers builds an empty directory.
func NewDevelopers() *Developers {
	return &Developers{devs: map[int64]*DeveloperAccount{}, mail: map[int64]*OutboxMail{}}
}

// Name is the checkpoint name of the projection.
func (*Developers) Name() string { return "developers" }

var developerTypes = typeSet(&catalog.DeveloperSignedUp{}, &catalog.DeveloperReviewed{},
	&catalog.MailQueued{}, &catalog.MailSent{}, &catalog.MailFailed{})

// Handles reports whether the directory applies events of this type.
func (*Developers) Handles(eventType string) bool { return developerTypes[eventType] }

// Checkpoint is held in memory: the directory is rebuilt at every start.
func (d *Developers) Checkpoint(context.Context) (events.Position, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.pos, nil
}

// Reset forgets everything.
func (d *Developers) Reset(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pos, d.devs, d.mail = events.Position{}, map[int64]*DeveloperAccount{}, map[int64]*OutboxMail{}
	return nil
}

// Apply updates the directory.
func (d *Developers) Apply(_ context.Context, batch []events.Envelope, pos events.Position) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, env := range batch {
		at := env.Metadata.OccurredAt.UTC()
		switch p := env.Payload.(type) {
		case *catalog.DeveloperSignedUp:
			d.devs[p.DeveloperID] = &DeveloperAccount{DeveloperID: p.DeveloperID, Email: p.Email, Status: catalog.DeveloperPending, SignedUpAt: at}
		case *catalog.DeveloperReviewed:
			if a, ok := d.devs[p.DeveloperID]; ok {
				next := *a
				next.Status, next.Reason, next.ReviewedAt, next.ReviewedBy = p.Status, p.Reason, &at, strings.Clone(env.Metadata.Actor)
				d.devs[p.DeveloperID] = &next
			}
		case *catalog.MailQueued:
			d.mail[p.MailID] = &OutboxMail{MailID: p.MailID, DeveloperID: p.DeveloperID, To: p.To, Subject: p.Subject, Body: p.Body, QueuedAt: at, Status: MailQueued}
		case *catalog.MailSent:
			if m, ok := d.mail[p.MailID]; ok {
				next := *m
				next.Status = MailSent
				d.mail[p.MailID] = &next
			}
		case *catalog.MailFailed:
			if m, ok := d.mail[p.MailID]; ok {
				next := *m
				next.Attempts, next.LastError, next.Status = p.Attempt, p.Error, MailRetrying
				if p.Final {
					next.Status = MailFailed
				}
				d.mail[p.MailID] = &next
			}
		}
	}
	d.pos = pos
	return nil
}

// Developer finds an account.
func (d *Developers) Developer(id int64) (DeveloperAccount, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	a, ok := d.devs[id]
	if !ok {
		return DeveloperAccount{}, false
	}
	return *a, true
}

// List returns the accounts with status (every one when status is ""), newest first.
func (d *Developers) List(status string) []DeveloperAccount {
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := []DeveloperAccount{}
	for _, a := range d.devs {
		if status == "" || a.Status == status {
			out = append(out, *a)
		}
	}
	slices.SortFunc(out, func(x, y DeveloperAccount) int { return int(y.DeveloperID - x.DeveloperID) })
	return out
}

// Outbox returns the messages, newest first; pending only keeps those not
// sent and not given up (the sender's work list, oldest first).
func (d *Developers) Outbox(pending bool) []OutboxMail {
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := []OutboxMail{}
	for _, m := range d.mail {
		if !pending || m.Status == MailQueued || m.Status == MailRetrying {
			out = append(out, *m)
		}
	}
	slices.SortFunc(out, func(x, y OutboxMail) int {
		if pending {
			return int(x.MailID - y.MailID)
		}
		return int(y.MailID - x.MailID)
	})
	return out
}

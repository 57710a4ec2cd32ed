package portal

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// DecisionMails tells a developer of every review decision about them (their
// qualification, an app's production review, a service provider's review),
// whichever edge took it: the ops pages, the admin API or platformctl. It
// follows the log (a subscribe.Runner's projector) instead of each edge
// mailing, and queues each mail under the decision's event id
// (commands.Mail.QueueOnce), so a replay of the log, a restart or several
// nodes following at once mail a decision exactly once. Its checkpoint lives
// in memory, and in Saved when set: without it a start reads the whole log
// again (an embedded log has no index by type, so that is every event) and
// finds the decisions mailed.
type DecisionMails struct {
	s   *Server
	reg *events.Registry
	// Saved, when set, keeps the checkpoint across starts (an embedded
	// node's file); losing a save only makes a start read a stretch again.
	Saved SavedPosition
	// loaded says Saved was read into pos (once per process).
	loaded bool

	mu    sync.Mutex
	pos   events.Position
	after events.Position // decisions at or before it are not mailed (Begin)
	begun bool
}

// SavedPosition is where DecisionMails keeps its checkpoint across starts.
type SavedPosition interface {
	Load(ctx context.Context) (events.Position, error)
	// Save must never move the position backwards.
	Save(ctx context.Context, pos events.Position) error
}

// decisionMailKind names the keyed mails of review decisions (their start in the log).
const decisionMailKind = "review-decisions"

// DecisionMails builds the follower; reg decodes the facts it looks up
// (who owns the app or provider decided).
func (s *Server) DecisionMails(reg *events.Registry) *DecisionMails {
	return &DecisionMails{s: s, reg: reg}
}

// Begin finds where decision mails begin in the log. Decisions taken
// before the first start of a node that mails from the events were mailed
// by the edge that took them (or, through the admin API, not at all), and
// are not mailed again long after. fromStart says the log was begun by a
// release that mails from the events (the node keeps that fact outside
// the log): every decision in it is mailed, and a start appends nothing.
// Otherwise the first such start records the log's head as the beginning
// (Mail.KeysStart), and later starts read it. Call Begin before the
// runner starts.
func (d *DecisionMails) Begin(ctx context.Context, fromStart bool) error {
	var after events.Position
	if !fromStart {
		head, err := d.s.Events.Head(ctx)
		if err != nil {
			return err
		}
		if after, err = d.s.Mail.KeysStart(ctx, decisionMailKind, head); err != nil {
			return fmt.Errorf("decision mails: %w", err)
		}
	}
	d.mu.Lock()
	d.after, d.begun = after, true
	d.mu.Unlock()
	return nil
}

// Name is the runner's name.
func (*DecisionMails) Name() string { return "review_decision_mails" }

var decisionTypes = map[string]bool{
	catalog.DeveloperReviewed{}.EventType(): true, catalog.AppReviewed{}.EventType(): true, catalog.ProviderReviewed{}.EventType(): true,
}

// Handles names the decision events, so the runner decodes nothing else.
func (*DecisionMails) Handles(eventType string) bool { return decisionTypes[eventType] }

// Checkpoint is the last position handled by this process, or the saved
// one at a start.
func (d *DecisionMails) Checkpoint(ctx context.Context) (events.Position, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.Saved != nil && !d.loaded {
		saved, err := d.Saved.Load(ctx)
		if err != nil {
			return events.Position{}, fmt.Errorf("decision mails checkpoint: %w", err)
		}
		d.loaded = true
		if d.pos.Less(saved) {
			d.pos = saved
		}
	}
	return d.pos, nil
}

// Reset starts over; every decision is looked at again, none mailed twice.
func (d *DecisionMails) Reset(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pos = events.Position{}
	return nil
}

// Apply mails the batch's decisions; a failure is retried by the runner
// (the mails already queued are found queued).
func (d *DecisionMails) Apply(ctx context.Context, batch []events.Envelope, pos events.Position) error {
	d.mu.Lock()
	after, begun := d.after, d.begun
	d.mu.Unlock()
	if !begun {
		return fmt.Errorf("decision mails: Begin was not called")
	}
	for _, env := range batch {
		if !after.Less(env.Position) {
			continue
		}
		if err := d.mail(ctx, env); err != nil {
			return fmt.Errorf("decision mail for event %s: %w", env.ID, err)
		}
	}
	d.mu.Lock()
	d.pos = pos
	d.mu.Unlock()
	if d.Saved != nil {
		// Every decision up to pos is mailed (queued in the log): a start
		// may resume after it. The runner hands over a batch without
		// decisions at most once a second, so this is that many file
		// syncs while the log grows and none while it is idle.
		if err := d.Saved.Save(ctx, pos); err != nil {
			return fmt.Errorf("decision mails checkpoint: %w", err)
		}
	}
	return nil
}

// mail queues the mail of one decision, if its subject has a developer.
func (d *DecisionMails) mail(ctx context.Context, env events.Envelope) error {
	var (
		devID                   int64
		what, notes, next, name string
		approved                bool
		streamErr               error
	)
	switch p := env.Payload.(type) {
	case *catalog.DeveloperReviewed:
		devID, what, notes, approved = p.DeveloperID, "developer account", p.Reason, p.Status == catalog.DeveloperApproved
	case *catalog.AppReviewed:
		var created *catalog.AppCreated
		created, streamErr = first[*catalog.AppCreated](ctx, d, domain.AppStream(p.AppID))
		if created != nil {
			devID, name = created.DeveloperID, created.Name
		}
		what, notes, approved = "application "+strconv.FormatInt(p.AppID, 10)+" ("+name+")", p.Notes, p.Approved
		next = "Request the review again from the application's page once the reason is addressed."
		if approved {
			next = "Reveal the production credentials on the sandbox application's page (they are shown once)."
		}
	case *catalog.ProviderReviewed:
		var reg *catalog.ProviderRegistered
		reg, streamErr = first[*catalog.ProviderRegistered](ctx, d, domain.ProviderStream(p.ProviderID))
		if reg != nil {
			devID, name = reg.DeveloperID, reg.Name
		}
		what, notes, approved = "service provider "+strconv.FormatInt(p.ProviderID, 10)+" ("+name+")", p.Notes, p.Approved
	default:
		return nil
	}
	if streamErr != nil {
		return streamErr
	}
	if devID == 0 {
		return nil // an app or provider created through the admin or partner API has no developer to tell
	}
	dev, err := d.s.Developers.Load(ctx, devID)
	if err == domain.ErrDeveloperNotFound || (err == nil && dev.Email == "") {
		return nil
	}
	if err != nil {
		return err
	}
	subject, body := decisionMail(what, approved, notes, next)
	body += "\nSee it in the developer portal:\n\n" + d.s.link("/portal/", nil) + "\n"
	_, _, err = d.s.Mail.QueueOnce(ctx, "review-"+env.ID, catalog.MailQueued{DeveloperID: devID, To: dev.Email, Subject: subject, Body: body},
		commands.Meta{Actor: "platform:review-decision", RequestID: env.Metadata.RequestID})
	return err
}

// first is the first event of stream (the creation of an app or a
// provider) when it is a T.
func first[T events.Payload](ctx context.Context, d *DecisionMails, stream string) (T, error) {
	var zero T
	recs, err := d.s.Events.ReadStream(ctx, stream, 0, 1)
	if err != nil || len(recs) == 0 {
		return zero, err
	}
	env, err := d.reg.Decode(recs[0])
	if err != nil {
		return zero, err
	}
	p, _ := env.Payload.(T)
	return p, nil
}

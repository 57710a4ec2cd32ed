package commands

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

// KindOperator is the id sequence of named operators.
const KindOperator = "operator"

// OperatorRoles are the roles an operator may be given (internal/auth
// decides what each may do).
var OperatorRoles = []string{"admin", "auditor", "support"}

// Operators creates and revokes named operators on their streams
// (domain.OperatorStream) and records audit facts (domain.AuditStream).
type Operators struct {
	streams
	ids *Allocator
	now func() time.Time
}

// NewOperators builds the operator commands.
func NewOperators(store events.Store, reg *events.Registry, ids *Allocator, now func() time.Time) *Operators {
	return &Operators{streams: streams{store: store, reg: reg}, ids: ids, now: now}
}

// CreatedOperator is what creation answers; Token is shown this once.
type CreatedOperator struct {
	OperatorID int64
	Name       string
	Role       string
	Token      string
	Position   events.Position
}

// CreateOperator gives a new operator a role and a token; only the token's
// SHA-256 is recorded. Bad input appends nothing.
func (o *Operators) CreateOperator(ctx context.Context, name, role string, meta Meta) (CreatedOperator, error) {
	name = strings.TrimSpace(name)
	v := &domain.ValidationError{}
	switch {
	case name == "":
		v.Add("name", "is required")
	case utf8.RuneCountInString(name) > 64:
		v.Add("name", "must be at most 64 characters")
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		v.Add("name", "must not contain control characters")
	}
	if !slices.Contains(OperatorRoles, role) {
		v.Add("role", "must be one of admin, auditor, support")
	}
	if err := v.Err(); err != nil {
		return CreatedOperator{}, err
	}
	id, err := o.ids.Next(ctx, KindOperator)
	if err != nil {
		return CreatedOperator{}, err
	}
	token := secrets.Random("opr_", 24)
	ev, err := o.reg.Encode(catalog.OperatorCreated{OperatorID: id, Name: name, Role: role, TokenHash: domain.HashToken(token)}, meta.events())
	if err != nil {
		return CreatedOperator{}, err
	}
	res, err := o.store.Append(ctx, domain.OperatorStream(id), events.NoStream(), ev)
	if err != nil {
		return CreatedOperator{}, err
	}
	return CreatedOperator{OperatorID: id, Name: name, Role: role, Token: token, Position: res.Position}, nil
}

// RevokeOperator ends an operator's token for good. Revoking a revoked
// operator changes nothing and appends nothing; an unknown id is
// domain.ErrOperatorNotFound.
func (o *Operators) RevokeOperator(ctx context.Context, id int64, meta Meta) (events.Position, error) {
	for range 5 {
		exists, revoked := false, false
		version, pos, err := o.load(ctx, domain.OperatorStream(id), func(env events.Envelope) {
			switch env.Payload.(type) {
			case *catalog.OperatorCreated:
				exists = true
			case *catalog.OperatorRevoked:
				revoked = true
			}
		})
		if err != nil {
			return events.Position{}, err
		}
		if !exists {
			return events.Position{}, domain.ErrOperatorNotFound
		}
		if revoked {
			return pos, nil
		}
		res, err := o.append(ctx, domain.OperatorStream(id), version, meta, catalog.OperatorRevoked{OperatorID: id})
		if events.IsConflict(err) {
			continue
		}
		return res.Position, err
	}
	return events.Position{}, domain.ErrContention
}

// withApps adds to an audit fact's subjects the stream of each app whose
// users it names (app-<id> after the user-<id> streams), so an app can be
// shown the accesses to its users' data (access transparency) by one
// subject filter. A user's app is in its stream's first event, which
// erasure leaves readable; an unknown user adds nothing.
func (o *Operators) withApps(ctx context.Context, subjects []string) ([]string, error) {
	var apps []string
	for _, s := range subjects {
		if _, ok := domain.UserStreamID(s); !ok {
			continue
		}
		recs, err := o.store.ReadStream(ctx, s, 0, 1)
		if err != nil {
			return nil, fmt.Errorf("record access: the app of %s: %w", s, err)
		}
		if len(recs) == 0 {
			continue
		}
		env, err := o.reg.Decode(recs[0])
		if err != nil {
			return nil, fmt.Errorf("record access: the app of %s: %w", s, err)
		}
		appID := env.Metadata.AppID
		if r, ok := env.Payload.(*catalog.UserRegistered); ok && r.AppID > 0 {
			appID = r.AppID
		}
		if app := domain.AppStream(appID); appID > 0 && !slices.Contains(subjects, app) && !slices.Contains(apps, app) {
			apps = append(apps, app)
		}
	}
	if len(apps) == 0 {
		return subjects, nil
	}
	return append(slices.Clip(subjects), apps...), nil
}

// RecordAccess appends an audit fact to its actor's audit stream. Facts
// never conflict (any revision): each is a fact of its own.
func (o *Operators) RecordAccess(ctx context.Context, fact catalog.AccessAudited, requestID string) (events.Position, error) {
	if fact.At.IsZero() {
		fact.At = o.now().UTC()
	}
	if fact.Subjects == nil {
		fact.Subjects = []string{}
	}
	subjects, err := o.withApps(ctx, fact.Subjects)
	if err != nil {
		return events.Position{}, err
	}
	fact.Subjects = subjects
	return o.appendAccess(ctx, fact, requestID)
}

// RecordOwnAccess is RecordAccess for an app's read of its own users'
// data: fact.AppID is the app of every user the subjects name (the read
// model that answered scoped the read to that app), so the app's stream
// is the subject RecordAccess would add after them, and no user's stream
// is read to learn it. The fact appended is the one RecordAccess appends.
func (o *Operators) RecordOwnAccess(ctx context.Context, fact catalog.AccessAudited, requestID string) (events.Position, error) {
	if fact.AppID <= 0 {
		return events.Position{}, fmt.Errorf("record access: an app's own access needs its app id (actor %s)", fact.Actor)
	}
	if fact.At.IsZero() {
		fact.At = o.now().UTC()
	}
	subjects := slices.Clip(fact.Subjects)
	if subjects == nil {
		subjects = []string{}
	}
	names := slices.ContainsFunc(subjects, func(s string) bool { _, ok := domain.UserStreamID(s); return ok })
	if app := domain.AppStream(fact.AppID); names && !slices.Contains(subjects, app) {
		subjects = append(subjects, app)
	}
	fact.Subjects = subjects
	return o.appendAccess(ctx, fact, requestID)
}

// appendAccess appends a fact whose subjects are complete to its actor's
// audit stream.
func (o *Operators) appendAccess(ctx context.Context, fact catalog.AccessAudited, requestID string) (events.Position, error) {
	meta := Meta{AppID: fact.AppID, Actor: fact.Actor, RequestID: requestID}
	ev, err := o.reg.Encode(fact, meta.events())
	if err != nil {
		return events.Position{}, err
	}
	res, err := o.store.Append(ctx, domain.AuditStream(fact.Actor), events.Any(), ev)
	return res.Position, err
}

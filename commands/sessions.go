package commands

import (
	"context"
	"maps"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// sessionSet is the portal sessions an account's stream says are open, by
// the SHA-256 of their id, with their start. Developers and operators keep
// theirs the same way: a sign-in is an event, a sign-out (one session or
// all) is an event, and a session is valid only while the stream says it
// is open; every node reads the same stream, so a sign-out on one node
// ends the session on all of them at once.
type sessionSet map[string]time.Time

func (s sessionSet) start(hash string, at time.Time) { s[hash] = at }

func (s *sessionSet) end(hash string, all bool) {
	if all {
		*s = sessionSet{}
		return
	}
	delete(*s, hash)
}

func (s sessionSet) open(hash string) bool { _, ok := s[hash]; return ok }

// operatorSessions is one operator's portal sessions as its
// domain.OperatorSessionsStream decides them.
type operatorSessions struct{ sessions sessionSet }

func (o *operatorSessions) apply(env events.Envelope) {
	if o.sessions == nil {
		o.sessions = sessionSet{}
	}
	switch p := env.Payload.(type) {
	case *catalog.OperatorPortalSignedIn:
		o.sessions.start(p.SessionHash, env.Metadata.OccurredAt)
	case *catalog.OperatorPortalSignedOut:
		o.sessions.end(p.SessionHash, p.All)
	}
}

func (o *operatorSessions) clone() *operatorSessions {
	return &operatorSessions{sessions: maps.Clone(o.sessions)}
}

// OperatorSessions records operator portal sessions on their own streams
// (operator id 0 is the bootstrap token), so an operator's sign-out is
// server-side, shared by every node, like a developer's.
type OperatorSessions struct {
	streams
	// cache keeps each operator's sessions loaded, so the check on every
	// ops page reads only the events appended since.
	cache *aggregateCache[*operatorSessions]
}

// NewOperatorSessions builds the operator session commands.
func NewOperatorSessions(store events.Store, reg *events.Registry) *OperatorSessions {
	return &OperatorSessions{streams: streams{store, reg},
		cache: newAggregateCache(func() *operatorSessions { return &operatorSessions{} }, DefaultAggregateCache)}
}

// Start records a new session of the operator (by the hash of its id).
func (o *OperatorSessions) Start(ctx context.Context, operatorID int64, sessionHash string, meta Meta) (events.Position, error) {
	return o.record(ctx, operatorID, meta, catalog.OperatorPortalSignedIn{OperatorID: operatorID, SessionHash: sessionHash})
}

// End ends one session of the operator, or all of them when all is set.
func (o *OperatorSessions) End(ctx context.Context, operatorID int64, sessionHash string, all bool, meta Meta) (events.Position, error) {
	if all {
		sessionHash = ""
	}
	return o.record(ctx, operatorID, meta, catalog.OperatorPortalSignedOut{OperatorID: operatorID, SessionHash: sessionHash, All: all})
}

// record appends a session fact; these never conflict with a decision
// (sessions start and end whatever else happened).
func (o *OperatorSessions) record(ctx context.Context, operatorID int64, meta Meta, p events.Payload) (events.Position, error) {
	ev, err := o.reg.Encode(p, meta.events())
	if err != nil {
		return events.Position{}, err
	}
	res, err := o.store.Append(ctx, domain.OperatorSessionsStream(operatorID), events.Any(), ev)
	return res.Position, err
}

// Open says the operator's session whose id hashes to sessionHash was
// started and not ended, as the log says now.
func (o *OperatorSessions) Open(ctx context.Context, operatorID int64, sessionHash string) (bool, error) {
	st, _, _, err := o.cache.load(ctx, o.streams, domain.OperatorSessionsStream(operatorID))
	if err != nil {
		return false, err
	}
	return st.sessions.open(sessionHash), nil
}

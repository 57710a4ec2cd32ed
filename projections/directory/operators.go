package directory

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Operator is a named operator as the directory knows it.
type Operator struct {
	OperatorID int64
	Name       string
	Role       string
	Revoked    bool
	CreatedAt  time.Time
	RevokedAt  *time.Time
}

// Operators is the in-memory directory of named operators every node keeps,
// like the app directory: operators are few, looked up on every admin call
// by the SHA-256 of their token, and rebuilt from the log at each start.
type Operators struct {
	mu     sync.RWMutex
	pos    events.Position
	byID   map[int64]*Operator
	byHash map[string]int64
}

// NewOperators builds an empty directory.
func NewOperators() *Operators {
	return &Operators{byID: map[int64]*Operator{}, byHash: map[string]int64{}}
}

// Name is the checkpoint name of the projection.
func (*Operators) Name() string { return "operators" }

// operatorTypes are the events the directory applies; the runner skips the rest.
var operatorTypes = typeSet(&catalog.OperatorCreated{}, &catalog.OperatorRevoked{})

// Handles reports whether the directory applies events of this type.
func (*Operators) Handles(eventType string) bool { return operatorTypes[eventType] }

// Checkpoint is held in memory: the directory is rebuilt at every start.
func (o *Operators) Checkpoint(context.Context) (events.Position, error) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.pos, nil
}

// Reset forgets every operator.
func (o *Operators) Reset(context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pos, o.byID, o.byHash = events.Position{}, map[int64]*Operator{}, map[string]int64{}
	return nil
}

// Apply updates the directory from operator events.
func (o *Operators) Apply(_ context.Context, batch []events.Envelope, pos events.Position) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, env := range batch {
		at := env.Metadata.OccurredAt.UTC()
		switch p := env.Payload.(type) {
		case *catalog.OperatorCreated:
			o.byID[p.OperatorID] = &Operator{OperatorID: p.OperatorID, Name: p.Name, Role: p.Role, CreatedAt: at}
			o.byHash[p.TokenHash] = p.OperatorID
		case *catalog.OperatorRevoked:
			if op, ok := o.byID[p.OperatorID]; ok && !op.Revoked {
				next := *op
				next.Revoked, next.RevokedAt = true, &at
				o.byID[p.OperatorID] = &next
			}
		}
	}
	o.pos = pos
	return nil
}

// ByTokenHash finds the live operator holding the token with this SHA-256.
func (o *Operators) ByTokenHash(hash string) (Operator, bool) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	id, ok := o.byHash[hash]
	if !ok {
		return Operator{}, false
	}
	op := o.byID[id]
	if op.Revoked {
		return Operator{}, false
	}
	return *op, true
}

// ByID finds an operator, revoked or not.
func (o *Operators) ByID(id int64) (Operator, bool) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	op, ok := o.byID[id]
	if !ok {
		return Operator{}, false
	}
	return *op, true
}

// List returns every operator ordered by id.
func (o *Operators) List() []Operator {
	o.mu.RLock()
	defer o.mu.RUnlock()
	out := make([]Operator, 0, len(o.byID))
	for _, op := range o.byID {
		out = append(out, *op)
	}
	slices.SortFunc(out, func(x, y Operator) int { return int(x.OperatorID - y.OperatorID) })
	return out
}

package projections

import (
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/nonces"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
)

// SnapshotQuery names one user's snapshot: by OpenUserID, or by the
// partner's ChannelUserID when that is set; members only those updated
// strictly after UpdatedAfter when it is non-zero.
type SnapshotQuery struct {
	AppID         int64
	OpenUserID    int64
	ChannelUserID string
	UpdatedAfter  time.Time
	// Bind, when set, is recorded as nonces.Store.Bind records it, in the
	// same round trip, first; Snapshot.Bound is then the value that holds.
	Bind *nonces.Binding
	// Take, when set, takes tokens from a shared rate-limit bucket in the
	// same round trip; Snapshot.Grant is then what it granted.
	Take *ratelimit.Take
}

// Snapshot is a user's rows read together with the position the users
// read model had applied before they were read (Checkpoint), and the log's head
// when the read model can see the log (HeadKnown), so that one round trip
// both proves read-your-writes and answers. Found is false when no user
// matched; Groups and Members are then empty.
type Snapshot struct {
	Checkpoint events.Position
	Head       events.Position
	HeadKnown  bool
	Bound      string
	// Grant is what the query's Take granted (Took: it was carried); not
	// part of the snapshot's content.
	Grant   ratelimit.Grant `json:"-"`
	Took    bool            `json:"-"`
	Found   bool
	User    User
	Groups  []Group
	Members []Member
}

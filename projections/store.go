// Package projections turns the event log into read models: projectors that
// translate events into rows, run by the subscription runtime in
// events/subscribe. Stores live in subpackages (projections/memory,
// projections/postgres); both pass the suite in projections/storetest.
package projections

import (
	"context"
	"errors"
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// ErrNotFound is returned by read-model lookups for a row that does not exist
// (or that the asking app may not see: tenancy is enforced by the query).
var ErrNotFound = errors.New("projections: not found")

// User is the read model of a channel user.
type User struct {
	AppID         int64
	OpenUserID    int64
	ChannelUserID string
	Name          string
	Nickname      *string
	Gender        string // male, female, unknown; "" when never given
	Avatar        *string
	Phone         *string // stored in full; masked at the HTTP edge
	Email         *string
	BirthDate     *string // Y-m-d
	Status        string  // ACTIVE
	RegisteredAt  time.Time
	UpdatedAt     time.Time
}

// Group is the read model of a family group.
type Group struct {
	AppID         int64
	OpenUserID    int64
	FamilyGroupID int64
	AppGroupID    int64
	Name          string
	Dissolved     bool
	MemberCount   int // valid members; filled by reads, ignored by writes
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Member is the read model of a family member.
type Member struct {
	AppID         int64
	OpenUserID    int64
	MemberID      int64
	AppUserID     string
	AppGroupID    int64
	FamilyGroupID int64
	Name          string
	Relationship  string
	Gender        *string
	BirthDate     *string // Y-m-d
	Phone         *string
	IDType        *string
	IDNumber      *string
	Height        *int64 // cm
	Weight        *int64 // kg x 100
	BloodType     *string
	IsDefault     bool
	Deleted       bool
	DeletedAt     *time.Time
	UpdatedAt     time.Time
}

// UserTx is one read-model transaction: every write of a batch of events and the
// checkpoint after it commit together, so replays are idempotent.
type UserTx interface {
	// User reads a user inside the transaction (ErrNotFound if absent), for
	// projectors that update part of a row.
	User(ctx context.Context, openUserID int64) (User, error)
	// Group reads a group inside the transaction (ErrNotFound if absent).
	Group(ctx context.Context, familyGroupID int64) (Group, error)
	// PutUser inserts or replaces the user keyed by OpenUserID.
	PutUser(ctx context.Context, u User) error
	// PutGroup inserts or replaces the group keyed by FamilyGroupID.
	PutGroup(ctx context.Context, g Group) error
	// PutMember inserts or replaces the member keyed by MemberID.
	PutMember(ctx context.Context, m Member) error
	// DeleteMember soft-deletes a member (Deleted=true, DeletedAt=at,
	// UpdatedAt=at); a missing member is not an error.
	DeleteMember(ctx context.Context, memberID int64, at time.Time) error
	// EraseUser removes the user's row and every group and member row of
	// theirs (erasure: the read model keeps nothing of the person); a
	// missing user is not an error.
	EraseUser(ctx context.Context, openUserID int64) error
}

// UserStore is the users read model's port: the users projector writes
// through Update, the query API and the plugin's phone binding read through
// the lookups.
type UserStore interface {
	Checkpoints
	// Update runs fn in one transaction and, in the same transaction, sets
	// the named projection's checkpoint to pos. If fn fails nothing changes.
	Update(ctx context.Context, projection string, pos events.Position, fn func(UserTx) error) error

	// User returns the user if it belongs to appID.
	User(ctx context.Context, appID, openUserID int64) (User, error)
	// UserByChannelID finds a user by the partner's own id.
	UserByChannelID(ctx context.Context, appID int64, channelUserID string) (User, error)
	// Groups returns the user's non-dissolved groups ordered by FamilyGroupID,
	// with MemberCount set to the number of non-deleted members.
	Groups(ctx context.Context, appID, openUserID int64) ([]Group, error)
	// Members returns the user's non-deleted members ordered by MemberID,
	// only those with UpdatedAt strictly after updatedAfter when it is non-zero.
	Members(ctx context.Context, appID, openUserID int64, updatedAfter time.Time) ([]Member, error)
	// UserByPhone finds the app's user with this phone (ErrNotFound if none; the
	// lowest OpenUserID if several), for binding plugin measurements.
	UserByPhone(ctx context.Context, appID int64, phone string) (User, error)
}

package projections

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// groupNamer is a UserTx that applies a group upsert without reading the
// group first: a new group is inserted as given, an existing one takes only
// the name and updated_at. Where each read costs a round trip inside the
// transaction (Postgres: a register's group upsert read once per event),
// the write is queued with the others instead.
type groupNamer interface {
	NameGroup(ctx context.Context, g Group) error
}

// userRegistrar is a UserTx told which user writes register a user: the
// log registers a user once, as the first event of the user's stream, so
// no group or member of theirs precedes it. A store that keeps a document
// derived from all of a user's rows (Postgres: the snapshot document) can
// build a registered user's from what the transaction itself writes,
// instead of reading the rows back.
type userRegistrar interface {
	RegisterUser(ctx context.Context, u User) error
}

func applyChannelUser(ctx context.Context, tx UserTx, env events.Envelope) error {
	at := env.Metadata.OccurredAt.UTC()
	appID := env.Metadata.AppID
	switch p := env.Payload.(type) {
	case *catalog.UserRegistered:
		channelUserID := p.ChannelUserID
		if channelUserID == "" {
			channelUserID = ErasedChannelUserID(p.OpenUserID)
		}
		u := User{AppID: p.AppID, OpenUserID: p.OpenUserID, ChannelUserID: channelUserID, Status: "ACTIVE", RegisteredAt: p.RegisteredAt.UTC(), UpdatedAt: at}
		setProfile(&u, p.Profile)
		if r, ok := tx.(userRegistrar); ok {
			return r.RegisterUser(ctx, u)
		}
		return tx.PutUser(ctx, u)
	case *catalog.UserProfileUpdated:
		u, err := tx.User(ctx, p.OpenUserID)
		if err != nil {
			return err
		}
		setProfile(&u, p.Profile)
		u.UpdatedAt = at
		return tx.PutUser(ctx, u)
	case *catalog.FamilyGroupUpserted:
		if n, ok := tx.(groupNamer); ok {
			return n.NameGroup(ctx, Group{AppID: appID, OpenUserID: p.OpenUserID, FamilyGroupID: p.FamilyGroupID,
				AppGroupID: p.AppGroupID, Name: p.Name, CreatedAt: at, UpdatedAt: at})
		}
		g, err := tx.Group(ctx, p.FamilyGroupID)
		if errors.Is(err, ErrNotFound) {
			g = Group{AppID: appID, OpenUserID: p.OpenUserID, FamilyGroupID: p.FamilyGroupID, AppGroupID: p.AppGroupID, CreatedAt: at}
		} else if err != nil {
			return err
		}
		g.Name, g.UpdatedAt = p.Name, at
		return tx.PutGroup(ctx, g)
	case *catalog.FamilyGroupDissolved:
		g, err := tx.Group(ctx, p.FamilyGroupID)
		if err != nil {
			return err
		}
		g.Dissolved, g.UpdatedAt = true, at
		if err := tx.PutGroup(ctx, g); err != nil {
			return err
		}
		for _, id := range p.DeletedMemberIDs {
			if err := tx.DeleteMember(ctx, id, at); err != nil {
				return err
			}
		}
	case *catalog.FamilyMemberCreated:
		return tx.PutMember(ctx, member(appID, p.OpenUserID, p.Member, at))
	case *catalog.FamilyMemberUpdated:
		return tx.PutMember(ctx, member(appID, p.OpenUserID, p.Member, at))
	case *catalog.FamilyMemberDeleted:
		return tx.DeleteMember(ctx, p.MemberID, at)
	case *catalog.UserErased:
		if err := tx.EraseUser(ctx, p.OpenUserID); err != nil {
			return err
		}
		if m, ok := tx.(ErasureMarker); ok {
			return m.MarkErased(ctx, env.Position)
		}
	}
	return nil
}

// ErasedChannelUserID stands in for the channel_user_id of an erased user
// while a projection replays their registration: the id is sealed with the
// user's destroyed key and reads as "", and the read models keep
// (app_id, channel_user_id) unique, so two erased users of one app would
// collide until their user.erased events drop them. It is longer than any
// channel_user_id a partner may register (100 characters), so it never
// matches one, and it is gone once the erasure is projected.
func ErasedChannelUserID(openUserID int64) string {
	return strings.Repeat("~", 101) + "erased-" + strconv.FormatInt(openUserID, 10)
}

// ErasureMarker is a users read model transaction that keeps the log position
// of each erasure it applies, for a store that must act once every read model
// has applied it (the Postgres store's purge of erased rows from its files).
type ErasureMarker interface {
	MarkErased(ctx context.Context, pos events.Position) error
}

func setProfile(u *User, p catalog.Profile) {
	u.Name, u.Nickname, u.Gender, u.Avatar, u.Phone, u.Email, u.BirthDate =
		p.Name, p.Nickname, p.Gender, p.Avatar, p.Phone, p.Email, p.BirthDate
}

func member(appID, openUserID int64, m catalog.Member, at time.Time) Member {
	return Member{
		AppID: appID, OpenUserID: openUserID, MemberID: m.MemberID, AppUserID: m.AppUserID,
		AppGroupID: m.AppGroupID, FamilyGroupID: m.FamilyGroupID, Name: m.Name, Relationship: m.Relationship,
		Gender: m.Gender, BirthDate: m.BirthDate, Phone: m.Phone, IDType: m.IDType, IDNumber: m.IDNumber,
		Height: m.Height, Weight: m.Weight, BloodType: m.BloodType, IsDefault: m.IsDefault, UpdatedAt: at,
	}
}

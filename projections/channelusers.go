package projections

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// ReadModelStore is a store holding every database read model; its
// transaction type implements both Tx and DeliveryTx.
type ReadModelStore interface {
	Store
	DeliveryStore
	ReportStore
	NonceStore
	OrderStore
	BenefitStore
}

// ReadModels projects every database read model of a store (channel users,
// webhook deliveries) in one transaction per batch with one checkpoint, so
// a rebuild resets and replays them together and none is left behind.
type ReadModels struct {
	Store    ReadModelStore
	Location *time.Location // the platform zone, for report days
}

// Name is the checkpoint name of the projection.
func (ReadModels) Name() string { return "read_models" }

// Checkpoint reads the projection's position from its store.
func (p ReadModels) Checkpoint(ctx context.Context) (events.Position, error) {
	return p.Store.Checkpoint(ctx, p.Name())
}

// Reset empties every read model of the store.
func (p ReadModels) Reset(ctx context.Context) error { return p.Store.Reset(ctx) }

// Apply writes a batch and its checkpoint in one transaction.
func (p ReadModels) Apply(ctx context.Context, batch []events.Envelope, pos events.Position) error {
	return p.Store.Update(ctx, p.Name(), pos, func(tx Tx) error {
		dtx, ok := tx.(DeliveryTx)
		rtx, ok2 := tx.(ReportTx)
		otx, ok3 := tx.(OrderTx)
		btx, ok4 := tx.(BenefitTx)
		if !ok || !ok2 || !ok3 || !ok4 {
			return fmt.Errorf("read-model transaction %T cannot write every read model", tx)
		}
		for _, env := range batch {
			err := applyChannelUser(ctx, tx, env)
			if err == nil {
				err = applyDelivery(ctx, dtx, env)
			}
			if err == nil {
				err = applyReport(ctx, rtx, env, p.Location)
			}
			if err == nil {
				err = applyOrder(ctx, otx, env)
			}
			if err == nil {
				err = applyBenefit(ctx, btx, env)
			}
			if err != nil {
				return fmt.Errorf("%s %s: %w", env.Type, env.ID, err)
			}
		}
		return nil
	})
}

func applyChannelUser(ctx context.Context, tx Tx, env events.Envelope) error {
	at := env.Metadata.OccurredAt.UTC()
	appID := env.Metadata.AppID
	switch p := env.Payload.(type) {
	case *catalog.UserRegistered:
		u := User{AppID: p.AppID, OpenUserID: p.OpenUserID, ChannelUserID: p.ChannelUserID, Status: "ACTIVE", RegisteredAt: p.RegisteredAt.UTC(), UpdatedAt: at}
		setProfile(&u, p.Profile)
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
	}
	return nil
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

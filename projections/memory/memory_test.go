package memory_test

import (
	"context"
	"errors"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory"
	"github.com/healthtech/partner-open-platform/projections/storetest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Store { return memory.New() })
}

// A write that would give two users the same channel id fails the whole
// Update and undoes the writes before it, as the Postgres unique index does.
func TestChannelConflictUndoes(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	a := projections.User{AppID: 1, OpenUserID: 1, ChannelUserID: "c"}
	if err := s.Update(ctx, "p", events.Position{Commit: 1}, func(tx projections.UserTx) error {
		return tx.PutUser(ctx, a)
	}); err != nil {
		t.Fatal(err)
	}
	err := s.Update(ctx, "p", events.Position{Commit: 2}, func(tx projections.UserTx) error {
		if err := tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: 2, ChannelUserID: "d"}); err != nil {
			return err
		}
		return tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: 3, ChannelUserID: "c"})
	})
	var conflict *memory.ChannelConflictError
	if !errors.As(err, &conflict) || conflict.OpenUserID != 1 {
		t.Fatalf("Update = %v, want ChannelConflictError held by 1", err)
	}
	if _, err := s.User(ctx, 1, 2); !errors.Is(err, projections.ErrNotFound) {
		t.Errorf("user 2 after failed Update: %v", err)
	}
	if p, _ := s.Checkpoint(ctx, "p"); p.Commit != 1 {
		t.Errorf("checkpoint = %v, want 1/0", p)
	}
	if u, err := s.UserByChannelID(ctx, 1, "c"); err != nil || u.OpenUserID != 1 {
		t.Errorf("UserByChannelID(c) = %v, %v", u.OpenUserID, err)
	}
}

func BenchmarkUserSnapshotRead(b *testing.B) {
	storetest.BenchmarkUserSnapshotRead(b, memory.New())
}

// Writes that would break a key the Postgres store keeps unique (a goods
// code, an order code, an order's item id, a card's user benefit item) fail
// with a ConflictError naming the holder, and undo their Update.
func TestConflictErrorsUndo(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	card := projections.Card{CardNumber: "c1", Items: []projections.CardItem{{UserBenefitItemID: 7}}}
	if err := s.Update(ctx, "p", events.Position{Commit: 1}, func(tx projections.UserTx) error {
		if err := tx.(projections.OrderTx).PutGoods(ctx, projections.Goods{GoodsID: 1, GoodsCode: "g"}); err != nil {
			return err
		}
		if err := tx.(projections.OrderTx).PutOrder(ctx, projections.Order{OrderID: 1, OrderCode: "o"}); err != nil {
			return err
		}
		return tx.(projections.BenefitTx).PutCard(ctx, card)
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		write      func(projections.UserTx) error
		key, value string
	}{
		{"goods code", func(tx projections.UserTx) error {
			return tx.(projections.OrderTx).PutGoods(ctx, projections.Goods{GoodsID: 2, GoodsCode: "g"})
		}, "goods_code", "g"},
		{"order code", func(tx projections.UserTx) error {
			return tx.(projections.OrderTx).PutOrder(ctx, projections.Order{OrderID: 2, OrderCode: "o"})
		}, "order_code", "o"},
		{"item id within an order", func(tx projections.UserTx) error {
			return tx.(projections.OrderTx).PutOrder(ctx, projections.Order{OrderID: 3, OrderCode: "o3",
				Items: []projections.OrderItem{{ItemID: 5}, {ItemID: 5}}})
		}, "item_id", "5"},
		{"card item of another card", func(tx projections.UserTx) error {
			return tx.(projections.BenefitTx).PutCard(ctx, projections.Card{CardNumber: "c2",
				Items: []projections.CardItem{{UserBenefitItemID: 7}}})
		}, "user_benefit_item_id", "7"},
	} {
		err := s.Update(ctx, "p", events.Position{Commit: 2}, func(tx projections.UserTx) error {
			// A write before the conflict, which the failure must undo.
			if err := tx.(projections.OrderTx).PutGoods(ctx, projections.Goods{GoodsID: 9, GoodsCode: "before"}); err != nil {
				return err
			}
			return c.write(tx)
		})
		var conflict *memory.ConflictError
		if !errors.As(err, &conflict) || conflict.Key != c.key || conflict.Value != c.value {
			t.Errorf("%s: Update = %v, want a ConflictError on %s %q", c.name, err, c.key, c.value)
		}
		if gs, _ := s.GoodsList(ctx); len(gs) != 1 {
			t.Errorf("%s: %d goods after the failed Update, want 1", c.name, len(gs))
		}
	}
	if p, _ := s.Checkpoint(ctx, "p"); p.Commit != 1 {
		t.Errorf("checkpoint = %v, want 1/0", p)
	}
	if _, err := s.CardByNumber(ctx, 0, "c2"); !errors.Is(err, projections.ErrNotFound) {
		t.Errorf("card of the failed Update: %v", err)
	}
}

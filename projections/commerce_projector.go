package projections

import (
	"context"
	"errors"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

func applyOrder(ctx context.Context, tx OrderTx, env events.Envelope) error {
	at := env.Metadata.OccurredAt.UTC()
	switch p := env.Payload.(type) {
	case *catalog.GoodsCreated:
		return tx.PutGoods(ctx, Goods{GoodsID: p.GoodsID, GoodsCode: p.GoodsCode, GoodsName: p.GoodsName, Active: true, CreatedAt: at, UpdatedAt: at})
	case *catalog.GoodsUpdated:
		g, err := tx.Goods(ctx, p.GoodsID)
		if err != nil {
			return err
		}
		g.GoodsName, g.UpdatedAt = p.GoodsName, at
		return tx.PutGoods(ctx, g)
	case *catalog.GoodsActivation:
		g, err := tx.Goods(ctx, p.GoodsID)
		if err != nil {
			return err
		}
		g.Active, g.UpdatedAt = p.Active, at
		return tx.PutGoods(ctx, g)
	case *catalog.OrderCreated:
		o := Order{
			OrderID: p.OrderID, OrderCode: p.OrderCode, AppID: p.AppID, ThirdOrderID: p.ThirdOrderID, UserID: p.UserID,
			ContactPerson: p.ContactPerson, ContactPhone: p.ContactPhone, Address: p.Address, AreaCode: p.AreaCode, AreaText: p.AreaText,
			LogisticsType: p.LogisticsType, PostagePolicy: p.PostagePolicy, PostageAmount: p.PostageAmount, Status: "PENDING_REVIEW",
			OrderSource: p.OrderSource, CooperationType: p.CooperationType, OrderTime: p.OrderTime.UTC(), CreatedAt: at, UpdatedAt: at,
		}
		for _, l := range p.Items {
			o.Items = append(o.Items, OrderItem{ItemID: l.ItemID, GoodsID: l.GoodsID, GoodsCode: l.GoodsCode, GoodsName: l.GoodsName,
				Quantity: l.Quantity, UnitPrice: l.UnitPrice, TotalPrice: l.TotalPrice, ShippingStatus: "PENDING_SHIPMENT", DeviceSNs: []string{}})
		}
		return tx.PutOrder(ctx, o)
	case *catalog.OrderReviewed:
		o, err := tx.Order(ctx, p.OrderID)
		if err != nil {
			return err
		}
		o.Status, o.UpdatedAt = "APPROVED", at
		if !p.Approved {
			o.Status, o.RejectReason = "REJECTED", p.Reason
		}
		return tx.PutOrder(ctx, o)
	case *catalog.OrderShipped:
		o, err := tx.Order(ctx, p.OrderID)
		if err != nil {
			return err
		}
		shipped := map[int64]catalog.ShippedLine{}
		for _, l := range p.Items {
			shipped[l.ItemID] = l
		}
		for i, it := range o.Items {
			if l, ok := shipped[it.ItemID]; ok {
				o.Items[i].ShippingStatus, o.Items[i].DeviceSNs = "SHIPPED", append([]string{}, l.DeviceSNs...)
			}
		}
		company, tracking, when := p.LogisticsCompany, p.TrackingNumber, p.ShippedAt.UTC()
		o.LogisticsCompany, o.TrackingNumber, o.ShippedAt, o.UpdatedAt = &company, &tracking, &when, at
		o.Status = "PARTIALLY_SHIPPED"
		if p.Complete {
			o.Status = "SHIPPED"
		}
		return tx.PutOrder(ctx, o)
	case *catalog.UserErased:
		// The receiver fields of the user's orders were sealed with the
		// user's key, which is gone: the log reads them as null from now
		// on, so blank them the same way (UpdatedAt untouched), and a
		// rebuild gives the same rows.
		ids, err := tx.UserOrders(ctx, p.OpenUserID)
		if err != nil {
			return err
		}
		for _, id := range ids {
			o, err := tx.Order(ctx, id)
			if err != nil {
				return err
			}
			o.ContactPerson, o.ContactPhone, o.Address, o.AreaText = "", "", "", nil
			if err := tx.PutOrder(ctx, o); err != nil {
				return err
			}
		}
	}
	return nil
}

func applyBenefit(ctx context.Context, tx BenefitTx, env events.Envelope) error {
	at := env.Metadata.OccurredAt.UTC()
	switch p := env.Payload.(type) {
	case *catalog.BenefitItemCreated:
		return tx.PutBenefitItem(ctx, BenefitItem{BenefitItemID: p.BenefitItemID, Name: p.Name, Status: "ACTIVE", CreatedAt: at, UpdatedAt: at})
	case *catalog.BenefitItemStatusChanged:
		b, err := tx.BenefitItem(ctx, p.BenefitItemID)
		if err != nil {
			return err
		}
		b.Status, b.UpdatedAt = p.Status, at
		return tx.PutBenefitItem(ctx, b)
	case *catalog.ProviderRegistered:
		return tx.PutProvider(ctx, ServiceProvider{ProviderID: p.ProviderID, AppID: p.AppID, Name: p.Name, Type: p.Type, Contact: p.Contact,
			PointsCode: p.PointsCode, Status: "PENDING_REVIEW", AllowedItemIDs: []int64{}, DeveloperID: p.DeveloperID, CreatedAt: at, UpdatedAt: at})
	case *catalog.ProviderReviewed:
		sp, err := tx.Provider(ctx, p.ProviderID)
		if err != nil {
			return err
		}
		sp.Status, sp.ReviewNotes, sp.UpdatedAt = "REJECTED", p.Notes, at
		if p.Approved {
			sp.Status = "APPROVED"
		}
		return tx.PutProvider(ctx, sp)
	case *catalog.ProviderItemsConfigured:
		sp, err := tx.Provider(ctx, p.ProviderID)
		if err != nil {
			return err
		}
		sp.AllowedItemIDs, sp.UpdatedAt = append([]int64{}, p.AllowedItemIDs...), at
		return tx.PutProvider(ctx, sp)
	case *catalog.CardIssued:
		c := Card{CardNumber: p.CardNumber, IssuerAppID: p.IssuerAppID, HolderName: p.HolderName, HolderPhone: p.HolderPhone,
			ExpiresAt: p.ExpiresAt.UTC(), CreatedAt: at, UpdatedAt: at}
		for _, l := range p.Items {
			c.Items = append(c.Items, CardItem{UserBenefitItemID: l.UserBenefitItemID, BenefitItemID: l.BenefitItemID, Total: l.Quantity, Remaining: l.Quantity})
		}
		return tx.PutCard(ctx, c)
	case *catalog.BenefitFulfilled:
		c, err := tx.Card(ctx, p.CardNumber)
		if err != nil {
			return err
		}
		for i, it := range c.Items {
			if it.UserBenefitItemID == p.UserBenefitItemID {
				c.Items[i].Remaining = p.Remaining
			}
		}
		c.UpdatedAt = at
		if err := tx.PutCard(ctx, c); err != nil {
			return err
		}
		return tx.PutFulfillment(ctx, Fulfillment{
			RecordID: p.RecordID, CardNumber: p.CardNumber, IssuerAppID: p.IssuerAppID, UserBenefitItemID: p.UserBenefitItemID,
			BenefitItemID: p.BenefitItemID, BenefitItemName: p.BenefitItemName, ProviderID: p.ProviderID, ProviderAppID: p.ProviderAppID,
			Quantity: p.Quantity, Status: "COMPLETED", PointsCode: p.PointsCode, Remark: p.Remark, InitiatedAt: p.At.UTC(), UpdatedAt: at,
		})
	case *catalog.FulfillmentRated:
		f, err := tx.Fulfillment(ctx, p.RecordID)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		rating := p.Rating
		f.Rating, f.UpdatedAt = &rating, at
		return tx.PutFulfillment(ctx, f)
	}
	return nil
}

package snapfile

import (
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// Image is one read model's rows at its checkpoint: what a
// snapshot keeps so that a start can restore the read model and follow the log
// from Checkpoint instead of replaying it all. Only rows are kept; the
// indexes are rebuilt by the same writes the projector makes, so a restored
// read model answers exactly as the replayed one did. Rows are ordered by their
// key, so two images of equal read models are equal.
type Image struct {
	ReadModel  projections.ReadModel
	Checkpoint events.Position

	Users   []projections.User
	Groups  []projections.Group
	Members []projections.Member

	Deliveries []projections.Delivery
	Attempts   []projections.Attempt

	Reports []projections.Report

	Goods  []projections.Goods
	Orders []projections.Order

	BenefitItems []projections.BenefitItem
	Providers    []projections.ServiceProvider
	Cards        []projections.Card
	Fulfillments []projections.Fulfillment

	AuditFacts []projections.AuditFact
}

// Rows counts the image's rows, for logs and metrics.
func (im *Image) Rows() int {
	return len(im.Users) + len(im.Groups) + len(im.Members) + len(im.Deliveries) + len(im.Attempts) + len(im.Reports) +
		len(im.Goods) + len(im.Orders) + len(im.BenefitItems) + len(im.Providers) + len(im.Cards) + len(im.Fulfillments) + len(im.AuditFacts)
}

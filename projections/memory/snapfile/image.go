package snapfile

import (
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// Image is one read model's rows at its checkpoint: what a
// snapshot keeps so that a start can restore the read model and follow the log
// from Checkpoint instead of replaying it all. Only rows are kept; the
// indexes are rebuilt as the projector's writes build them, so a restored
// read model answers exactly as the replayed one did. Rows are ordered by their
// key, so two images of equal read models are equal.
//
// An image read from a file shares bytes among its rows: the texts and
// bodies of Users, Members and Deliveries view the decoded sections, and
// the optional fields of Users and Members point into blocks shared by a
// section's rows (so a start makes no allocation per text of those
// rows). Nothing writes those bytes again, but a row kept whole keeps
// its section alive: a reader that keeps rows copies what it keeps (the
// in-memory store packs them into rows of its own).
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

	// Paged, when set, lends tables whose slices above are left empty a
	// section at a time while Write encodes them, so a writer need not
	// hold a second copy of a large read model's rows.
	Paged Pager `json:"-"`

	// BodiesInLog says that a delivery of a nil Body has its body in the
	// log only, in the webhook.delivery.created event at its Cursor (the
	// in-memory store keeps a final delivery's body there alone); an
	// erased body is empty. Without it a nil Body is an erased one, as
	// files written before it hold them.
	BodiesInLog bool `json:"-"`
}

// Table names one table of an Image by its index in the file.
type Table uint16

// The tables of an Image (their index in the file).
const (
	TableUsers Table = iota
	TableGroups
	TableMembers
	TableDeliveries
	TableAttempts
	TableReports
	TableGoods
	TableOrders
	TableBenefitItems
	TableProviders
	TableCards
	TableFulfillments
	TableAuditFacts
)

// Pager lends an image's tables a section at a time.
type Pager interface {
	// Len is how many rows the table has, and whether the pager lends it.
	Len(t Table) (int, bool)
	// Page sets page's slice of table t to the table's rows [from, to) in
	// key order; the slice may be reused by the next call.
	Page(t Table, from, to int, page *Image) error
}

// Rows counts the image's rows, for logs and metrics.
func (im *Image) Rows() int {
	n := 0
	if im.Paged != nil {
		for t := range Table(len(imageFields)) {
			if m, ok := im.Paged.Len(t); ok {
				n += m
			}
		}
	}
	return n + len(im.Users) + len(im.Groups) + len(im.Members) + len(im.Deliveries) + len(im.Attempts) + len(im.Reports) +
		len(im.Goods) + len(im.Orders) + len(im.BenefitItems) + len(im.Providers) + len(im.Cards) + len(im.Fulfillments) + len(im.AuditFacts)
}

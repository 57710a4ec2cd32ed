package projections

import (
	"context"
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// BenefitItem is a kind of benefit a card may hold (a health check, a consultation).
type BenefitItem struct {
	BenefitItemID int64
	Name          string
	Status        string // ACTIVE, SUSPENDED
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// ServiceProvider is an organisation that verifies benefit uses, linked to the app whose credentials it uses.
type ServiceProvider struct {
	ProviderID     int64
	AppID          int64
	Name           string
	Type           string // HEALTH_STATION, SERVICE_PROVIDER, CHANNEL_PARTNER
	Contact        string
	PointsCode     *string // HEALTH_STATION only
	Status         string  // PENDING_REVIEW, APPROVED, REJECTED
	AllowedItemIDs []int64 // ascending
	// DeveloperID is the portal developer who registered it (0: the partner API).
	DeveloperID int64
	// ReviewNotes are the operator's words with the review decision.
	ReviewNotes string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Card is a benefit card with its per-item quantities.
type Card struct {
	CardNumber  string // 15 characters
	IssuerAppID int64
	HolderName  string
	HolderPhone *string
	ExpiresAt   time.Time
	Items       []CardItem // ordered by UserBenefitItemID
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// CardItem is one benefit item on a card: the user's entitlement.
type CardItem struct {
	UserBenefitItemID int64
	BenefitItemID     int64
	Total             int64
	Remaining         int64
}

// Fulfillment is one verified use of a benefit.
type Fulfillment struct {
	RecordID          int64
	CardNumber        string
	IssuerAppID       int64
	UserBenefitItemID int64
	BenefitItemID     int64
	BenefitItemName   string
	ProviderID        int64
	ProviderAppID     int64
	Quantity          int64
	Status            string // COMPLETED, CANCELLED, FAILED
	PointsCode        *string
	Remark            *string
	InitiatedAt       time.Time
	Rating            *int
	UpdatedAt         time.Time
}

// FulfillmentFilter selects fulfillment records; zero fields match all.
type FulfillmentFilter struct {
	ProviderID int64
	// ProviderAppID selects the records verified through any provider of this
	// app, merged into one page in RecordID order with one cursor.
	ProviderAppID int64
	IssuerAppID   int64
	CardNumber    string
	After         int64 // RecordID strictly greater
	Limit         int   // <= 0: 100; capped at 1000
}

// BenefitTx is the part of a read-model transaction the benefit projector writes.
type BenefitTx interface {
	PutBenefitItem(ctx context.Context, b BenefitItem) error
	BenefitItem(ctx context.Context, id int64) (BenefitItem, error)
	PutProvider(ctx context.Context, p ServiceProvider) error
	Provider(ctx context.Context, id int64) (ServiceProvider, error)
	// PutCard inserts or replaces a card with all its items.
	PutCard(ctx context.Context, c Card) error
	Card(ctx context.Context, number string) (Card, error)
	PutFulfillment(ctx context.Context, f Fulfillment) error
	Fulfillment(ctx context.Context, id int64) (Fulfillment, error)
}

// BenefitStore is what benefit reads need.
type BenefitStore interface {
	Checkpoints
	// UpdateBenefits runs fn in one transaction with the named checkpoint.
	UpdateBenefits(ctx context.Context, projection string, pos events.Position, fn func(BenefitTx) error) error
	BenefitItems(ctx context.Context) ([]BenefitItem, error)
	// Providers lists service providers ordered by ProviderID; appID 0 lists all.
	Providers(ctx context.Context, appID int64) ([]ServiceProvider, error)
	// DeveloperProviders lists the providers a portal developer registered,
	// ordered by ProviderID (none for developer 0), so the portal shows a
	// developer only their own.
	DeveloperProviders(ctx context.Context, developerID int64) ([]ServiceProvider, error)
	// CardByNumber returns a card if issued by issuerAppID (0: any); else ErrNotFound.
	CardByNumber(ctx context.Context, issuerAppID int64, number string) (Card, error)
	// Fulfillments lists records by filter ordered by RecordID.
	Fulfillments(ctx context.Context, f FulfillmentFilter) ([]Fulfillment, error)
}

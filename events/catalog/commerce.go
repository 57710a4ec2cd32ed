package catalog

import "time"

// GoodsCreated adds goods to the catalog; the stream goods-<code> makes codes unique.
type GoodsCreated struct {
	GoodsID   int64  `json:"goods_id"`
	GoodsCode string `json:"goods_code"`
	GoodsName string `json:"goods_name"`
}

// EventType names the event in the log.
func (GoodsCreated) EventType() string { return "goods.created" }

// GoodsUpdated renames goods.
type GoodsUpdated struct {
	GoodsID   int64  `json:"goods_id"`
	GoodsCode string `json:"goods_code"`
	GoodsName string `json:"goods_name"`
}

// EventType names the event in the log.
func (GoodsUpdated) EventType() string { return "goods.updated" }

// GoodsActivation withdraws goods from ordering (Active false) or restores them.
type GoodsActivation struct {
	GoodsID   int64  `json:"goods_id"`
	GoodsCode string `json:"goods_code"`
	Active    bool   `json:"active"`
}

// EventType names the event in the log.
func (GoodsActivation) EventType() string { return "goods.activation_changed" }

// OrderKeyClaimed makes (app_id, third_order_id) unique: the stream
// orderkey-<app>-<third_order_id> holds only this event.
type OrderKeyClaimed struct {
	AppID        int64  `json:"app_id"`
	ThirdOrderID string `json:"third_order_id"`
	OrderID      int64  `json:"order_id"`
}

// EventType names the event in the log.
func (OrderKeyClaimed) EventType() string { return "order.key_claimed" }

// OrderLine is an order item as created.
type OrderLine struct {
	ItemID     int64  `json:"item_id"`
	GoodsID    int64  `json:"goods_id"`
	GoodsCode  string `json:"goods_code"`
	GoodsName  string `json:"goods_name"`
	Quantity   int64  `json:"quantity"`
	UnitPrice  int64  `json:"unit_price"`
	TotalPrice int64  `json:"total_price"`
}

// OrderCreated records a purchase order in PENDING_REVIEW. RequestHash
// identifies the request's content, so a repeat can be told from a conflict.
type OrderCreated struct {
	OrderID         int64       `json:"order_id"`
	OrderCode       string      `json:"order_code"`
	AppID           int64       `json:"app_id"`
	ThirdOrderID    string      `json:"third_order_id"`
	UserID          *int64      `json:"user_id"`
	ContactPerson   string      `json:"contact_person"`
	ContactPhone    string      `json:"contact_phone"`
	Address         string      `json:"address"`
	AreaCode        *string     `json:"area_code"`
	AreaText        *string     `json:"area_text"`
	LogisticsType   string      `json:"logistics_type"`
	PostagePolicy   string      `json:"postage_policy"`
	PostageAmount   int64       `json:"postage_amount"`
	OrderSource     string      `json:"order_source"`
	CooperationType string      `json:"cooperation_type"`
	OrderTime       time.Time   `json:"order_time"`
	Items           []OrderLine `json:"items"`
	RequestHash     string      `json:"request_hash"`
}

// EventType names the event in the log.
func (OrderCreated) EventType() string { return "order.created" }

// OrderReviewed moves an order from PENDING_REVIEW to APPROVED or REJECTED.
type OrderReviewed struct {
	OrderID  int64   `json:"order_id"`
	AppID    int64   `json:"app_id"`
	Approved bool    `json:"approved"`
	Reason   *string `json:"reason"`
	By       string  `json:"by"`
}

// EventType names the event in the log.
func (OrderReviewed) EventType() string { return "order.reviewed" }

// ShippedLine is what one shipment sent of one order item.
type ShippedLine struct {
	ItemID    int64    `json:"item_id"`
	GoodsCode string   `json:"goods_code"`
	Quantity  int64    `json:"quantity"`
	DeviceSNs []string `json:"device_sns"`
}

// OrderShipped records a shipment; Complete is true when every item has shipped.
type OrderShipped struct {
	OrderID          int64         `json:"order_id"`
	OrderCode        string        `json:"order_code"`
	AppID            int64         `json:"app_id"`
	ThirdOrderID     string        `json:"third_order_id"`
	LogisticsCompany string        `json:"logistics_company"`
	TrackingNumber   string        `json:"tracking_number"`
	Items            []ShippedLine `json:"items"`
	ShippedAt        time.Time     `json:"shipped_at"`
	Complete         bool          `json:"complete"`
	Source           string        `json:"source"` // internal, operator, sandbox_test
}

// EventType names the event in the log.
func (OrderShipped) EventType() string { return "order.shipped" }

// AppReviewed records the onboarding review of a sandbox app; approval
// creates the production app (ProductionAppID) with its own credentials.
type AppReviewed struct {
	AppID           int64  `json:"app_id"`
	Approved        bool   `json:"approved"`
	Notes           string `json:"notes"`
	ProductionAppID int64  `json:"production_app_id,omitempty"`
	// PluginAppID is issued on approval when the review request named the
	// host mini-program's app id: the id the host's manifest declares.
	PluginAppID string `json:"plugin_app_id,omitempty"`
}

// EventType names the event in the log.
func (AppReviewed) EventType() string { return "app.reviewed" }

// AppReviewRequested records a developer's request for the production
// review of a sandbox app; a rejected app may ask again.
type AppReviewRequested struct {
	AppID int64 `json:"app_id"`
	// HostAppID is the host mini-program's app id, given for a host-plugin
	// integration (approval then issues a plugin app id); "" otherwise.
	HostAppID string `json:"host_app_id,omitempty"`
}

// EventType names the event in the log.
func (AppReviewRequested) EventType() string { return "app.review_requested" }

// AppProductionRevealed records, on the sandbox app's stream, that the
// developer took the production credentials: the production app's secrets
// are re-issued (sealed here, shown once to the developer) and the sandbox
// app is retired, its credentials refused from then on. Being on one
// stream at an expected revision, it happens once across nodes and restarts.
type AppProductionRevealed struct {
	AppID               int64  `json:"app_id"`
	ProductionAppID     int64  `json:"production_app_id"`
	SealedAppSecret     string `json:"sealed_app_secret"`
	SealedWebhookSecret string `json:"sealed_webhook_secret"`
}

// EventType names the event in the log.
func (AppProductionRevealed) EventType() string { return "app.production_credentials_revealed" }

// AppScopesDeclared records the API scopes an app declared (least privilege).
type AppScopesDeclared struct {
	AppID  int64    `json:"app_id"`
	Scopes []string `json:"scopes"`
}

// EventType names the event in the log.
func (AppScopesDeclared) EventType() string { return "app.scopes_declared" }

// ProviderRegistered records a service provider's registration, pending review.
type ProviderRegistered struct {
	ProviderID int64   `json:"provider_id"`
	AppID      int64   `json:"app_id"`
	Name       string  `json:"name"`
	Type       string  `json:"type"`
	Contact    string  `json:"contact"`
	PointsCode *string `json:"points_code"`
	// DeveloperID is the portal developer who registered the provider; 0
	// for a registration through the partner API.
	DeveloperID int64 `json:"developer_id,omitempty"`
}

// EventType names the event in the log.
func (ProviderRegistered) EventType() string { return "provider.registered" }

// ProviderReviewed approves or rejects a provider.
type ProviderReviewed struct {
	ProviderID int64  `json:"provider_id"`
	Approved   bool   `json:"approved"`
	Notes      string `json:"notes"`
}

// EventType names the event in the log.
func (ProviderReviewed) EventType() string { return "provider.reviewed" }

// ProviderItemsConfigured sets which benefit items a provider may verify.
type ProviderItemsConfigured struct {
	ProviderID     int64   `json:"provider_id"`
	AllowedItemIDs []int64 `json:"allowed_benefit_item_ids"`
}

// EventType names the event in the log.
func (ProviderItemsConfigured) EventType() string { return "provider.items_configured" }

// BenefitItemCreated adds a kind of benefit.
type BenefitItemCreated struct {
	BenefitItemID int64  `json:"benefit_item_id"`
	Name          string `json:"name"`
}

// EventType names the event in the log.
func (BenefitItemCreated) EventType() string { return "benefit_item.created" }

// BenefitItemStatusChanged suspends or reactivates a benefit item.
type BenefitItemStatusChanged struct {
	BenefitItemID int64  `json:"benefit_item_id"`
	Status        string `json:"status"` // ACTIVE, SUSPENDED
}

// EventType names the event in the log.
func (BenefitItemStatusChanged) EventType() string { return "benefit_item.status_changed" }

// CardLine is one entitlement on an issued card.
type CardLine struct {
	UserBenefitItemID int64 `json:"user_benefit_item_id"`
	BenefitItemID     int64 `json:"benefit_item_id"`
	Quantity          int64 `json:"quantity"`
}

// CardIssued opens the stream card-<number>; numbers are unique by it.
type CardIssued struct {
	CardNumber  string     `json:"card_number"`
	IssuerAppID int64      `json:"issuer_app_id"`
	HolderName  string     `json:"holder_name"`
	HolderPhone *string    `json:"holder_phone"`
	ExpiresAt   time.Time  `json:"expires_at"`
	Items       []CardLine `json:"items"`
	IssuedBy    string     `json:"issued_by"`
}

// EventType names the event in the log.
func (CardIssued) EventType() string { return "benefit_card.issued" }

// BenefitFulfilled records a verified use; it lives in the card's stream, so
// the remaining quantity is decided with the card's expected revision.
type BenefitFulfilled struct {
	RecordID          int64     `json:"fulfillment_record_id"`
	CardNumber        string    `json:"card_number"`
	IssuerAppID       int64     `json:"issuer_app_id"`
	UserBenefitItemID int64     `json:"user_benefit_item_id"`
	BenefitItemID     int64     `json:"benefit_item_id"`
	BenefitItemName   string    `json:"benefit_item_name"`
	ProviderID        int64     `json:"provider_id"`
	ProviderAppID     int64     `json:"provider_app_id"`
	Quantity          int64     `json:"quantity"`
	Remaining         int64     `json:"remaining_quantity"`
	PointsCode        *string   `json:"points_code"`
	Remark            *string   `json:"remark"`
	At                time.Time `json:"at"`
}

// EventType names the event in the log.
func (BenefitFulfilled) EventType() string { return "benefit.fulfilled" }

// FulfillmentRated adds the user's rating; the stream fulfillment-<id> makes it once only.
type FulfillmentRated struct {
	RecordID    int64 `json:"fulfillment_record_id"`
	IssuerAppID int64 `json:"issuer_app_id"`
	Rating      int   `json:"rating"`
}

// EventType names the event in the log.
func (FulfillmentRated) EventType() string { return "benefit.fulfillment_rated" }

// PlannedCard is one card of a batch as decided before it exists: its number
// and the user_benefit_item_ids of its lines, in the request's order.
type PlannedCard struct {
	CardNumber         string  `json:"card_number"`
	UserBenefitItemIDs []int64 `json:"user_benefit_item_ids"`
	// NumberChosen is true when the caller chose the number (operators only);
	// a generated number may be replaced, a chosen one never.
	NumberChosen bool `json:"number_chosen,omitempty"`
}

// CardBatchPlanned opens the stream cardbatch-<issuer>-<key>: the batch's
// numbers and ids are recorded before any card exists, so a retry of the
// same batch finishes it with the same cards instead of issuing new ones.
// It holds no holder data: the key is a digest of the request, and only the
// same request can finish the batch.
type CardBatchPlanned struct {
	IssuerAppID int64         `json:"issuer_app_id"`
	Key         string        `json:"key"`
	Cards       []PlannedCard `json:"cards"`
}

// EventType names the event in the log.
func (CardBatchPlanned) EventType() string { return "benefit_card.batch_planned" }

// CardBatchRenumbered replaces a generated card number that another card
// took between planning and issuing (a random collision), so the batch can
// still complete with numbers every retry agrees on.
type CardBatchRenumbered struct {
	IssuerAppID int64  `json:"issuer_app_id"`
	Index       int    `json:"index"`
	CardNumber  string `json:"card_number"`
}

// EventType names the event in the log.
func (CardBatchRenumbered) EventType() string { return "benefit_card.batch_renumbered" }

// CardBatchCompleted says every card of the batch exists; its position
// covers all of them, so a read after it sees the whole batch.
type CardBatchCompleted struct {
	IssuerAppID int64 `json:"issuer_app_id"`
	Cards       int   `json:"cards"`
}

// EventType names the event in the log.
func (CardBatchCompleted) EventType() string { return "benefit_card.batch_completed" }

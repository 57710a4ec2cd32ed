package commands

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Provider types and states.
const (
	ProviderHealthStation  = "HEALTH_STATION"
	ProviderService        = "SERVICE_PROVIDER"
	ProviderChannelPartner = "CHANNEL_PARTNER"
	ProviderPending        = "PENDING_REVIEW"
	ProviderApproved       = "APPROVED"
	ProviderRejected       = "REJECTED"
	ItemActive             = "ACTIVE"
	ItemSuspended          = "SUSPENDED"
)

// ProviderDirectory lists an app's providers; the read model answers it,
// and each candidate's state is then loaded from its own stream.
type ProviderDirectory interface {
	ProviderIDs(ctx context.Context, appID int64) ([]int64, error)
	FulfillmentIssuer(ctx context.Context, recordID int64) (int64, bool, error)
}

// Benefits handles benefit items, providers, cards and verification.
type Benefits struct {
	streams
	ids       *Allocator
	now       func() time.Time
	cooldown  time.Duration
	providers ProviderDirectory
	batches   keyedMutex // card batches being issued, by stream

	// Verifications wait in their card's queue; one of them at a time
	// decides the waiting ones and appends them together (verifyBatch).
	queueMu sync.Mutex
	queues  map[string]*cardQueue

	cacheMu sync.Mutex
	cache   map[string]*cachedCard // card aggregates, read incrementally

	// The providers and benefit items verify-use reads, incrementally.
	providerCache readCache[providerState]
	itemCache     readCache[itemState]
}

// cachedCard is a card's state as of version events; only the card's
// leading verification (cardQueue) touches it.
type cachedCard struct {
	state   cardState
	version uint64
}

// maxCachedCards bounds the card cache; an evicted card is replayed once.
const maxCachedCards = 10000

// cardAt returns the card's current state, reading only the events appended
// since it was last seen (by this node or any other). Callers lead the card's queue.
//
// With trustCached, a card already cached is returned without reading its
// stream (read is false): a use decided on it is appended after the cached
// version, so an event another node appended meanwhile fails the append as
// a conflict, and the uses are decided again on what cardAt then reads. On
// Postgres this saves a round trip per use of a card this node holds.
func (b *Benefits) cardAt(ctx context.Context, number string, trustCached bool) (c *cachedCard, read bool, err error) {
	b.cacheMu.Lock()
	if b.cache == nil {
		b.cache = map[string]*cachedCard{}
	}
	c = b.cache[number]
	if c == nil {
		if len(b.cache) >= maxCachedCards {
			for k := range b.cache { // drop an arbitrary entry
				delete(b.cache, k)
				break
			}
		}
		c = &cachedCard{}
		b.cache[number] = c
	}
	b.cacheMu.Unlock()
	if trustCached && c.version > 0 {
		return c, false, nil
	}
	recs, err := b.store.ReadStream(ctx, domain.CardStream(number), c.version, 0)
	if err != nil {
		return nil, true, err
	}
	for _, r := range recs {
		env, err := b.reg.Decode(r)
		if err != nil {
			return nil, true, err
		}
		c.state.apply(env)
	}
	c.version += uint64(len(recs))
	return c, true, nil
}

// NewBenefits builds the handler; cooldown is the DUPLICATE_FULFILLMENT window.
func NewBenefits(store events.Store, reg *events.Registry, ids *Allocator, now func() time.Time, cooldown time.Duration, providers ProviderDirectory) *Benefits {
	return &Benefits{streams: streams{store, reg}, ids: ids, now: now, cooldown: cooldown, providers: providers}
}

// keyedMutex serialises commands on one key inside this process, so a hot
// card's verifications queue instead of conflicting; across processes the
// expected revision still decides.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	mu   sync.Mutex
	refs int
}

func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyedEntry{}
	}
	e := k.m[key]
	if e == nil {
		e = &keyedEntry{}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}

// itemState is a benefit item's aggregate.
type itemState struct {
	id     int64
	name   string
	status string
}

func (s *itemState) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.BenefitItemCreated:
		s.id, s.name, s.status = p.BenefitItemID, p.Name, ItemActive
	case *catalog.BenefitItemStatusChanged:
		s.status = p.Status
	}
}

// currentItem is the item's state as of now, for a decision that reads it
// without appending to it (verify-use): read incrementally through the cache.
func (b *Benefits) currentItem(ctx context.Context, id int64) (itemState, error) {
	return b.itemCache.read(ctx, b.streams, domain.BenefitItemStream(id), (*itemState).apply)
}

func (b *Benefits) item(ctx context.Context, id int64) (itemState, uint64, events.Position, error) {
	var s itemState
	v, pos, err := b.load(ctx, domain.BenefitItemStream(id), s.apply)
	return s, v, pos, err
}

// validateItemName checks a new benefit item's name.
func validateItemName(name string) error {
	v := &domain.ValidationError{}
	r := rules{v: v}
	if r.required("name", name) {
		r.maxLen("name", name, 64)
	}
	return v.Err()
}

// decideCreateItem creates an active benefit item under a fresh id (its
// stream is new).
func decideCreateItem(id int64, name string) []events.Payload {
	return []events.Payload{catalog.BenefitItemCreated{BenefitItemID: id, Name: name}}
}

// CreateItem adds a benefit item, active.
func (b *Benefits) CreateItem(ctx context.Context, name string, meta Meta) (int64, events.Position, error) {
	if err := validateItemName(name); err != nil {
		return 0, events.Position{}, err
	}
	id, err := b.ids.Next(ctx, "benefit_item")
	if err != nil {
		return 0, events.Position{}, err
	}
	res, err := b.append(ctx, domain.BenefitItemStream(id), 0, meta, decideCreateItem(id, name)...)
	return id, res.Position, err
}

// decideSetItemStatus suspends or reactivates an existing item; the status
// it already has decides nothing.
func decideSetItemStatus(st *itemState, status string) ([]events.Payload, error) {
	if st.id == 0 {
		return nil, domain.ErrBenefitItemNotFound
	}
	if st.status == status {
		return nil, nil
	}
	return []events.Payload{catalog.BenefitItemStatusChanged{BenefitItemID: st.id, Status: status}}, nil
}

// SetItemStatus suspends or reactivates a benefit item.
func (b *Benefits) SetItemStatus(ctx context.Context, id int64, status string, meta Meta) (events.Position, error) {
	return execute(ctx, b.streams, replay[*itemState]{func() *itemState { return &itemState{} }}, domain.BenefitItemStream(id), &meta, func(s *itemState) ([]events.Payload, error) {
		return decideSetItemStatus(s, status)
	})
}

// providerState is a service provider's aggregate.
type providerState struct {
	reg     *catalog.ProviderRegistered
	status  string
	allowed []int64
}

func (s *providerState) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.ProviderRegistered:
		s.reg, s.status = p, ProviderPending
	case *catalog.ProviderReviewed:
		s.status = ProviderRejected
		if p.Approved {
			s.status = ProviderApproved
		}
	case *catalog.ProviderItemsConfigured:
		s.allowed = p.AllowedItemIDs
	}
}

// currentProvider is the provider's state as of now, for a decision that
// reads it without appending to it (verify-use, channel-partner checks):
// read incrementally through the cache. apply replaces the registration and
// the allowed list, never writes through them, so copies stay as read.
func (b *Benefits) currentProvider(ctx context.Context, id int64) (providerState, error) {
	return b.providerCache.read(ctx, b.streams, domain.ProviderStream(id), (*providerState).apply)
}

func (b *Benefits) provider(ctx context.Context, id int64) (providerState, uint64, error) {
	var s providerState
	v, _, err := b.load(ctx, domain.ProviderStream(id), s.apply)
	return s, v, err
}

// ProviderInput is a service provider's registration.
type ProviderInput struct {
	AppID      int64
	Name       string
	Type       string
	Contact    string
	PointsCode *string
	// DeveloperID is the portal developer registering the provider (0: the
	// partner API), so the portal shows the provider to its developer only.
	DeveloperID int64
}

// validate checks a registration: a points_code for HEALTH_STATION
// providers only.
func (in ProviderInput) validate() error {
	v := &domain.ValidationError{}
	r := rules{v: v}
	if r.required("name", in.Name) {
		r.maxLen("name", in.Name, 100)
	}
	if r.required("type", in.Type) {
		r.oneOf("type", in.Type, set(ProviderHealthStation, ProviderService, ProviderChannelPartner), "HEALTH_STATION, SERVICE_PROVIDER, CHANNEL_PARTNER")
	}
	if r.required("contact", in.Contact) {
		r.maxLen("contact", in.Contact, 100)
	}
	switch {
	case in.Type == ProviderHealthStation && (in.PointsCode == nil || *in.PointsCode == ""):
		v.Add("points_code", "is required for HEALTH_STATION providers")
	case in.Type != ProviderHealthStation && in.PointsCode != nil:
		v.Add("points_code", "is only for HEALTH_STATION providers")
	case in.PointsCode != nil:
		r.maxLen("points_code", *in.PointsCode, 64)
	}
	return v.Err()
}

// decideRegisterProvider records a validated provider pending review under
// a fresh id (its stream is new).
func decideRegisterProvider(id int64, in ProviderInput) []events.Payload {
	return []events.Payload{catalog.ProviderRegistered{ProviderID: id, AppID: in.AppID, Name: in.Name, Type: in.Type, Contact: in.Contact, PointsCode: in.PointsCode, DeveloperID: in.DeveloperID}}
}

// RegisterProvider records a provider pending review, linked to an app.
func (b *Benefits) RegisterProvider(ctx context.Context, in ProviderInput, meta Meta) (int64, events.Position, error) {
	if err := in.validate(); err != nil {
		return 0, events.Position{}, err
	}
	id, err := b.ids.Next(ctx, "provider")
	if err != nil {
		return 0, events.Position{}, err
	}
	meta.AppID = in.AppID
	res, err := b.append(ctx, domain.ProviderStream(id), 0, meta, decideRegisterProvider(id, in)...)
	return id, res.Position, err
}

// validateReviewNotes bounds an operator's review notes.
func validateReviewNotes(notes string) error {
	if utf8.RuneCountInString(notes) > 500 {
		v := &domain.ValidationError{}
		v.Add("notes", "must be at most 500 characters")
		return v
	}
	return nil
}

// decideReviewProvider approves or rejects a provider once: only a pending
// one is reviewed.
func decideReviewProvider(st *providerState, approve bool, notes string) ([]events.Payload, error) {
	if st.reg == nil {
		return nil, domain.ErrProviderNotFound
	}
	if st.status != ProviderPending {
		return nil, domain.ErrProviderAlreadyReview
	}
	return []events.Payload{catalog.ProviderReviewed{ProviderID: st.reg.ProviderID, Approved: approve, Notes: notes}}, nil
}

// ReviewProvider approves or rejects a pending provider.
func (b *Benefits) ReviewProvider(ctx context.Context, id int64, approve bool, notes string, meta Meta) (events.Position, error) {
	if err := validateReviewNotes(notes); err != nil {
		return events.Position{}, err
	}
	s, version, err := b.provider(ctx, id)
	if err != nil {
		return events.Position{}, err
	}
	ps, err := decideReviewProvider(&s, approve, notes)
	if err != nil {
		return events.Position{}, err
	}
	meta.AppID = s.reg.AppID
	res, err := b.append(ctx, domain.ProviderStream(id), version, meta, ps...)
	if events.IsConflict(err) {
		return events.Position{}, domain.ErrProviderAlreadyReview
	}
	return res.Position, err
}

// normalizeIDs sorts ids and drops repeats.
func normalizeIDs(ids []int64) []int64 {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return slices.Compact(ids)
}

// decideConfigureItems sets the benefit items (normalised, items[i] the
// state of ids[i]) a provider may verify: every one must exist, and a
// CHANNEL_PARTNER verifies none.
func decideConfigureItems(st *providerState, ids []int64, items []itemState) ([]events.Payload, error) {
	for i, it := range ids {
		if items[i].id == 0 {
			v := &domain.ValidationError{}
			v.Add("allowed_benefit_item_ids", fmt.Sprintf("benefit item %d does not exist", it))
			return nil, v
		}
	}
	if st.reg == nil {
		return nil, domain.ErrProviderNotFound
	}
	if st.reg.Type == ProviderChannelPartner && len(ids) > 0 {
		v := &domain.ValidationError{}
		v.Add("allowed_benefit_item_ids", "CHANNEL_PARTNER providers never verify benefit uses")
		return nil, v
	}
	return []events.Payload{catalog.ProviderItemsConfigured{ProviderID: st.reg.ProviderID, AllowedItemIDs: ids}}, nil
}

// ConfigureItems sets the benefit items a provider may verify.
func (b *Benefits) ConfigureItems(ctx context.Context, id int64, items []int64, meta Meta) (events.Position, error) {
	items = normalizeIDs(items)
	states := make([]itemState, len(items))
	for i, it := range items {
		s, _, _, err := b.item(ctx, it)
		if err != nil {
			return events.Position{}, err
		}
		states[i] = s
		if s.id == 0 {
			break // refused by the decision; the rest need not be read
		}
	}
	return execute(ctx, b.streams, replay[*providerState]{func() *providerState { return &providerState{} }}, domain.ProviderStream(id), &meta, func(s *providerState) ([]events.Payload, error) {
		ps, err := decideConfigureItems(s, items, states)
		if err == nil {
			meta.AppID = s.reg.AppID
		}
		return ps, err
	})
}

// CardInput is a card to issue.
type CardInput struct {
	CardNumber  string // empty: generated
	HolderName  string
	HolderPhone *string
	ExpiresAt   time.Time
	Items       []CardItemInput
}

// CardItemInput is one benefit and its quantity on a new card.
type CardItemInput struct {
	BenefitItemID int64
	Quantity      int64
}

// IssuedCard answers an issuance.
type IssuedCard struct {
	CardNumber string
	Items      []catalog.CardLine
	Position   events.Position
}

func randomCardNumber() string {
	n, _ := rand.Int(rand.Reader, big.NewInt(9e14))
	return strconv.FormatInt(n.Int64()+1e14, 10) // 15 digits, no leading zero
}

func validateCard(prefix string, c CardInput, now time.Time, v *domain.ValidationError) {
	r := rules{v: v, today: now.Format(time.DateOnly)}
	if c.CardNumber != "" && (utf8.RuneCountInString(c.CardNumber) != 15 || !isAlnum(c.CardNumber)) {
		v.Add(prefix+"card_number", "must be 15 letters or digits")
	}
	if r.required(prefix+"holder_name", c.HolderName) {
		r.maxLen(prefix+"holder_name", c.HolderName, 32)
	}
	if c.HolderPhone != nil {
		r.mobile(prefix+"holder_phone", *c.HolderPhone)
	}
	if !c.ExpiresAt.After(now) {
		v.Add(prefix+"expires_at", "must be in the future")
	}
	if len(c.Items) == 0 || len(c.Items) > 50 {
		v.Add(prefix+"items", "must have 1 to 50 elements")
	}
	for i, it := range c.Items {
		if it.Quantity < 1 || it.Quantity > 100000 {
			v.Add(fmt.Sprintf("%sitems[%d].quantity", prefix, i), "must be between 1 and 100000")
		}
	}
}

func isAlnum(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// CardBatch is one issuance request. Its content identifies it: the same
// batch sent again (a retry after a timeout or an error) answers the same
// cards and issues nothing new, so a partner never loses or doubles a card.
type CardBatch struct {
	IssuerAppID int64
	// BatchID is optional; it tells apart batches whose cards are otherwise
	// identical (send a new one to issue the same content twice).
	BatchID string
	Cards   []CardInput
	// PlatformNumbers refuses caller-chosen card numbers: partners get numbers
	// from the platform, so issuance never reveals another issuer's card.
	PlatformNumbers bool
}

// IssueCards issues an operator's batch (numbers may be chosen); see IssueBatch.
func (b *Benefits) IssueCards(ctx context.Context, issuerAppID int64, cards []CardInput, meta Meta) ([]IssuedCard, error) {
	return b.IssueBatch(ctx, CardBatch{IssuerAppID: issuerAppID, Cards: cards}, meta)
}

// maxBatchID bounds the optional batch_id.
const maxBatchID = 64

// validateBatch checks a batch as of now: 1 to 100 cards, each expiring
// later, numbers chosen only by operators and never twice.
func validateBatch(batch CardBatch, now time.Time) error {
	v := &domain.ValidationError{}
	if len(batch.Cards) == 0 || len(batch.Cards) > 100 {
		v.Add("cards", "must have 1 to 100 elements")
	}
	if utf8.RuneCountInString(batch.BatchID) > maxBatchID {
		v.Add("batch_id", fmt.Sprintf("must be at most %d characters", maxBatchID))
	}
	numbers := map[string]bool{}
	for i, c := range batch.Cards {
		validateCard(fmt.Sprintf("cards[%d].", i), c, now, v)
		if c.CardNumber == "" {
			continue
		}
		if batch.PlatformNumbers {
			v.Add(fmt.Sprintf("cards[%d].card_number", i), "is assigned by the platform; omit it")
		} else if numbers[c.CardNumber] {
			v.Add(fmt.Sprintf("cards[%d].card_number", i), "is repeated in this request")
		}
		numbers[c.CardNumber] = true
	}
	return v.Err()
}

// batchKey digests the batch as parsed (not its bytes: key order and
// whitespace do not make a new batch).
func batchKey(batch CardBatch) string {
	type line struct {
		Item int64 `json:"i"`
		Qty  int64 `json:"q"`
	}
	type card struct {
		Number  string  `json:"n"`
		Holder  string  `json:"h"`
		Phone   *string `json:"p"`
		Expires string  `json:"e"`
		Lines   []line  `json:"l"`
	}
	c := struct {
		Issuer  int64  `json:"a"`
		BatchID string `json:"b"`
		Cards   []card `json:"c"`
	}{Issuer: batch.IssuerAppID, BatchID: batch.BatchID}
	for _, in := range batch.Cards {
		k := card{Number: in.CardNumber, Holder: in.HolderName, Phone: in.HolderPhone, Expires: in.ExpiresAt.UTC().Format(time.RFC3339Nano)}
		for _, it := range in.Items {
			k.Lines = append(k.Lines, line{it.BenefitItemID, it.Quantity})
		}
		c.Cards = append(c.Cards, k)
	}
	raw, _ := json.Marshal(c) // plain structs: cannot fail
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16])
}

// batchState is a card batch's aggregate.
type batchState struct {
	cards     []catalog.PlannedCard
	completed bool
}

func (s *batchState) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.CardBatchPlanned:
		s.cards = slices.Clone(p.Cards)
	case *catalog.CardBatchRenumbered:
		if p.Index >= 0 && p.Index < len(s.cards) {
			s.cards[p.Index].CardNumber = p.CardNumber
		}
	case *catalog.CardBatchCompleted:
		s.completed = true
	}
}

// batchEventID derives an event id from the batch, so that the same step
// retried by any node is recognised by the store as already written.
func batchEventID(stream string, parts ...any) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte(fmt.Sprint(append([]any{"partner-open-platform:", stream}, parts...)...))).String()
}

// IssueBatch issues a batch of cards for an issuer app, atomically as seen
// by the caller and idempotently: the batch's numbers and ids are first
// recorded on its own stream (claimed with no-stream), then each card is
// created under an event id derived from the batch, then the batch is marked
// complete. A retry, or a concurrent copy, of the same batch finishes what
// is missing and answers the same cards. A chosen number already issued
// fails the batch before anything is written.
func (b *Benefits) IssueBatch(ctx context.Context, batch CardBatch, meta Meta) ([]IssuedCard, error) {
	if err := validateBatch(batch, b.now()); err != nil {
		return nil, err
	}
	meta.AppID = batch.IssuerAppID
	stream := domain.CardBatchStream(batch.IssuerAppID, batchKey(batch))
	unlock := b.batches.lock(stream)
	defer unlock()
	var st batchState
	if _, _, err := b.load(ctx, stream, st.apply); err != nil {
		return nil, err
	}
	if st.cards == nil {
		if err := b.planBatch(ctx, stream, batch, meta); err != nil {
			return nil, err
		}
	}
	return b.finishBatch(ctx, stream, batch, meta)
}

// planBatch is a new batch's plan with what chance and the allocator decide
// gathered up front: a generated number for each card that names none, and
// one user_benefit_item_id per line.
type planBatch struct {
	Batch   CardBatch
	Key     string    // the batch's digest, its stream's suffix
	Numbers []string  // per card: the generated number, "" when chosen
	LineIDs [][]int64 // per card, per line
}

// checkPlan refuses a batch naming a benefit item that is missing or not
// active (items, by id), or a chosen number already issued (taken).
func checkPlan(batch CardBatch, items map[int64]itemState, taken map[string]bool) error {
	for _, c := range batch.Cards {
		for _, it := range c.Items {
			s := items[it.BenefitItemID]
			if s.id == 0 {
				return fmt.Errorf("%w: %d", domain.ErrBenefitItemNotFound, it.BenefitItemID)
			}
			if s.status != ItemActive {
				return fmt.Errorf("%w: %d", domain.ErrBenefitItemInactive, it.BenefitItemID)
			}
		}
	}
	for _, c := range batch.Cards {
		if c.CardNumber != "" && taken[c.CardNumber] {
			return domain.ErrCardNumberTaken // the number stays out of errors and logs
		}
	}
	return nil
}

// decidePlanBatch records a new batch's numbers and ids before any card
// exists; a batch planned before keeps its plan.
func decidePlanBatch(st *batchState, items map[int64]itemState, taken map[string]bool, c planBatch) ([]events.Payload, error) {
	if st.cards != nil {
		return nil, nil
	}
	if err := checkPlan(c.Batch, items, taken); err != nil {
		return nil, err
	}
	plan := catalog.CardBatchPlanned{IssuerAppID: c.Batch.IssuerAppID, Key: c.Key, Cards: make([]catalog.PlannedCard, len(c.Batch.Cards))}
	for i, card := range c.Batch.Cards {
		pc := catalog.PlannedCard{CardNumber: card.CardNumber, NumberChosen: card.CardNumber != "", UserBenefitItemIDs: c.LineIDs[i]}
		if !pc.NumberChosen {
			pc.CardNumber = c.Numbers[i]
		}
		plan.Cards[i] = pc
	}
	return []events.Payload{plan}, nil
}

// planBatch checks a new batch against the log and records its plan; a
// conflict means an identical batch planned first, whose plan then wins.
func (b *Benefits) planBatch(ctx context.Context, stream string, batch CardBatch, meta Meta) error {
	items := map[int64]itemState{}
	for _, c := range batch.Cards {
		for _, it := range c.Items {
			if _, ok := items[it.BenefitItemID]; ok {
				continue
			}
			s, _, _, err := b.item(ctx, it.BenefitItemID)
			if err != nil {
				return err
			}
			items[it.BenefitItemID] = s
		}
	}
	taken := map[string]bool{}
	if err := checkPlan(batch, items, taken); err != nil {
		return err // before any card stream is read
	}
	for _, c := range batch.Cards {
		if c.CardNumber == "" {
			continue
		}
		recs, err := b.store.ReadStream(ctx, domain.CardStream(c.CardNumber), 0, 1)
		if err != nil {
			return err
		}
		if len(recs) > 0 {
			taken[c.CardNumber] = true
			break // refused below; the rest need not be read
		}
	}
	if err := checkPlan(batch, items, taken); err != nil {
		return err // before ids are allocated
	}
	c := planBatch{Batch: batch, Key: strings.TrimPrefix(stream, "cardbatch-"), Numbers: make([]string, len(batch.Cards)), LineIDs: make([][]int64, len(batch.Cards))}
	for i, card := range batch.Cards {
		if card.CardNumber == "" {
			c.Numbers[i] = randomCardNumber()
		}
		for range card.Items {
			id, err := b.ids.Next(ctx, "user_benefit_item")
			if err != nil {
				return err
			}
			c.LineIDs[i] = append(c.LineIDs[i], id)
		}
	}
	ps, err := decidePlanBatch(&batchState{}, items, taken, c)
	if err != nil {
		return err
	}
	_, err = b.append(ctx, stream, 0, meta, ps...)
	if events.IsConflict(err) {
		return nil
	}
	return err
}

// decideTakenNumber answers planned card i whose stream another card holds:
// a chosen number refuses the batch, a generated one is replaced by fresh in
// the plan, so every retry agrees on the new one.
func decideTakenNumber(st *batchState, issuerAppID int64, i int, fresh string) ([]events.Payload, error) {
	if st.cards[i].NumberChosen {
		return nil, domain.ErrCardNumberTaken
	}
	return []events.Payload{catalog.CardBatchRenumbered{IssuerAppID: issuerAppID, Index: i, CardNumber: fresh}}, nil
}

// decideCompleteBatch marks a batch whose cards are all issued complete, once.
func decideCompleteBatch(st *batchState, issuerAppID int64) []events.Payload {
	if st.completed {
		return nil
	}
	return []events.Payload{catalog.CardBatchCompleted{IssuerAppID: issuerAppID, Cards: len(st.cards)}}
}

// finishBatch creates the planned cards that do not exist yet and marks the
// batch complete, answering every card of the batch.
func (b *Benefits) finishBatch(ctx context.Context, stream string, batch CardBatch, meta Meta) ([]IssuedCard, error) {
	for attempt := 0; attempt < maxAttempts; attempt++ {
		var st batchState
		version, pos, err := b.load(ctx, stream, st.apply)
		if err != nil {
			return nil, err
		}
		if len(st.cards) != len(batch.Cards) {
			return nil, fmt.Errorf("card batch %s: plan holds %d cards, request %d", stream, len(st.cards), len(batch.Cards))
		}
		complete := decideCompleteBatch(&st, batch.IssuerAppID)
		if complete == nil {
			return issuedCards(batch, st, pos), nil
		}
		retry := false
		for i, pc := range st.cards {
			issued, err := b.reg.Encode(cardIssued(batch, i, pc, meta.Actor), meta.events())
			if err != nil {
				return nil, err
			}
			issued.ID = batchEventID(stream, "card", i, pc.CardNumber)
			_, err = b.store.Append(ctx, domain.CardStream(pc.CardNumber), events.NoStream(), issued)
			if events.IsConflict(err) {
				var recs []events.Recorded
				if recs, err = b.store.ReadStream(ctx, domain.CardStream(pc.CardNumber), 0, 1); err != nil {
					return nil, err
				}
				if len(recs) > 0 && recs[0].ID == issued.ID {
					continue // this batch's card, written before
				}
				// Another card holds the number.
				renumber, err := decideTakenNumber(&st, batch.IssuerAppID, i, randomCardNumber())
				if err != nil {
					return nil, err
				}
				_, err = b.append(ctx, stream, version, meta, renumber...)
				if err != nil && !events.IsConflict(err) {
					return nil, err
				}
				retry = true
				break
			}
			if err != nil {
				return nil, err
			}
		}
		if retry {
			continue
		}
		done, err := b.reg.Encode(complete[0], meta.events())
		if err != nil {
			return nil, err
		}
		done.ID = batchEventID(stream, "completed", version)
		res, err := b.store.Append(ctx, stream, events.AfterVersion(version), done)
		if events.IsConflict(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return issuedCards(batch, st, res.Position), nil
	}
	return nil, domain.ErrContention
}

func cardLines(in CardInput, pc catalog.PlannedCard) []catalog.CardLine {
	lines := make([]catalog.CardLine, len(in.Items))
	for j, it := range in.Items {
		lines[j] = catalog.CardLine{UserBenefitItemID: pc.UserBenefitItemIDs[j], BenefitItemID: it.BenefitItemID, Quantity: it.Quantity}
	}
	return lines
}

// cardIssued is planned card i of the batch as its stream's first event;
// the store's no-stream append decides that the number is free.
func cardIssued(batch CardBatch, i int, pc catalog.PlannedCard, actor string) catalog.CardIssued {
	c := batch.Cards[i]
	return catalog.CardIssued{
		CardNumber: pc.CardNumber, IssuerAppID: batch.IssuerAppID, HolderName: c.HolderName, HolderPhone: c.HolderPhone,
		ExpiresAt: c.ExpiresAt.UTC(), Items: cardLines(c, pc), IssuedBy: actor,
	}
}

// issuedCards answers a batch; pos covers every card of it.
func issuedCards(batch CardBatch, st batchState, pos events.Position) []IssuedCard {
	out := make([]IssuedCard, len(st.cards))
	for i, pc := range st.cards {
		out[i] = IssuedCard{CardNumber: pc.CardNumber, Items: cardLines(batch.Cards[i], pc), Position: pos}
	}
	return out
}

// cardState is a card as verification decides on it.
type cardState struct {
	issued    *catalog.CardIssued
	remaining map[int64]int64      // by user_benefit_item_id
	lastUse   map[string]time.Time // user_benefit_item_id/provider -> last verification
}

func (s *cardState) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.CardIssued:
		s.issued, s.remaining, s.lastUse = p, map[int64]int64{}, map[string]time.Time{}
		for _, l := range p.Items {
			s.remaining[l.UserBenefitItemID] = l.Quantity
		}
	case *catalog.BenefitFulfilled:
		s.remaining[p.UserBenefitItemID] = p.Remaining
		s.lastUse[useKey(p.UserBenefitItemID, p.ProviderID)] = p.At
	}
}

func useKey(item, provider int64) string {
	return strconv.FormatInt(item, 10) + "/" + strconv.FormatInt(provider, 10)
}

// VerifyInput is a verify-use request. The card item is named by
// user_benefit_item_id or, as the alternative, by benefit_item_id (the
// card's entitlement to that benefit item).
type VerifyInput struct {
	CardNumber        string
	UserBenefitItemID *int64
	BenefitItemID     *int64
	Quantity          int64
	PointsCode        *string
	ServiceProviderID *int64
	Remark            *string
}

// Verified answers a successful verification.
type Verified struct {
	RecordID        int64
	CardNumber      string
	BenefitItemName string
	Quantity        int64
	Remaining       int64
	HolderName      string
	HolderPhone     *string
	At              time.Time
	Position        events.Position
}

func (in *VerifyInput) validate() error {
	v := &domain.ValidationError{}
	if utf8.RuneCountInString(in.CardNumber) != 15 {
		v.Add("card_number", "is required and must be 15 characters")
	}
	switch {
	case in.UserBenefitItemID == nil && in.BenefitItemID == nil:
		v.Add("user_benefit_item_id", "user_benefit_item_id or benefit_item_id is required")
	case in.UserBenefitItemID != nil && in.BenefitItemID != nil:
		v.Add("user_benefit_item_id", "send user_benefit_item_id or benefit_item_id, not both")
	}
	if in.Quantity < 1 || in.Quantity > 1000 {
		v.Add("quantity", "must be between 1 and 1000")
	}
	if in.Remark != nil && utf8.RuneCountInString(*in.Remark) > 200 {
		v.Add("remark", "must be at most 200 characters")
	}
	if in.PointsCode != nil && utf8.RuneCountInString(*in.PointsCode) > 64 {
		v.Add("points_code", "must be at most 64 characters")
	}
	return v.Err()
}

// verifyProviders keeps the caller's providers (as loaded from their
// streams) through which it may verify this request: its own, approved,
// not CHANNEL_PARTNER, the one named by service_provider_id, a
// HEALTH_STATION only with its points_code. When the request names a
// benefit_item_id, one of them must be allowed that item. It depends only on
// the caller's providers and the request, never on a card.
func verifyProviders(appID int64, in VerifyInput, providers []providerState) ([]providerState, error) {
	var out []providerState
	for _, s := range providers {
		if s.reg == nil || s.reg.AppID != appID || s.status != ProviderApproved || s.reg.Type == ProviderChannelPartner {
			continue
		}
		if in.ServiceProviderID != nil && *in.ServiceProviderID != s.reg.ProviderID {
			continue
		}
		if s.reg.Type == ProviderHealthStation && (in.PointsCode == nil || *in.PointsCode != *s.reg.PointsCode) {
			continue
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, domain.ErrProviderUnauthorized
	}
	if in.BenefitItemID != nil && !slices.ContainsFunc(out, func(p providerState) bool { return slices.Contains(p.allowed, *in.BenefitItemID) }) {
		return nil, domain.ErrProviderUnauthorized
	}
	return out, nil
}

// callerProviders loads the app's providers and keeps those through which
// it may verify this request (verifyProviders).
func (b *Benefits) callerProviders(ctx context.Context, appID int64, in VerifyInput) ([]providerState, error) {
	ids, err := b.providers.ProviderIDs(ctx, appID)
	if err != nil {
		return nil, err
	}
	var loaded []providerState
	for _, id := range ids {
		if in.ServiceProviderID != nil && *in.ServiceProviderID != id {
			continue // verifyProviders would drop it
		}
		s, err := b.currentProvider(ctx, id)
		if err != nil {
			return nil, err
		}
		loaded = append(loaded, s)
	}
	return verifyProviders(appID, in, loaded)
}

// verifyUse is Verify with what its decision needs gathered: the caller,
// the time, the cooldown and the fulfillment record's id.
type verifyUse struct {
	AppID    int64
	In       VerifyInput
	RecordID int64
	Now      time.Time
	Cooldown time.Duration
}

// verifyLine finds the card item the request names and the first
// candidate allowed to verify it. A card the app may not verify (missing,
// without that item, or with an item none of its providers may verify) is
// CARD_NOT_FOUND alike: answering 403 would tell it that the card exists.
func verifyLine(card *cardState, candidates []providerState, in VerifyInput) (catalog.CardLine, *providerState, error) {
	if card.issued == nil {
		return catalog.CardLine{}, nil, domain.ErrCardNotFound
	}
	for _, l := range card.issued.Items {
		if (in.UserBenefitItemID != nil && l.UserBenefitItemID == *in.UserBenefitItemID) || (in.BenefitItemID != nil && l.BenefitItemID == *in.BenefitItemID) {
			for i := range candidates {
				if slices.Contains(candidates[i].allowed, l.BenefitItemID) {
					return l, &candidates[i], nil
				}
			}
			return catalog.CardLine{}, nil, domain.ErrCardNotFound
		}
	}
	return catalog.CardLine{}, nil, domain.ErrCardNotFound
}

// checkVerify refuses a use of the card item (item is the state of its
// benefit item): suspended item, expired card, the same card item by the
// same provider within the cooldown, not enough remaining.
func checkVerify(card *cardState, candidates []providerState, item itemState, c verifyUse) (catalog.CardLine, *providerState, error) {
	line, prov, err := verifyLine(card, candidates, c.In)
	if err != nil {
		return line, nil, err
	}
	if item.status != ItemActive {
		return line, nil, domain.ErrBenefitItemInactive
	}
	if !c.Now.Before(card.issued.ExpiresAt) {
		return line, nil, domain.ErrCardExpired
	}
	if last, ok := card.lastUse[useKey(line.UserBenefitItemID, prov.reg.ProviderID)]; ok && c.Cooldown > 0 && c.Now.Sub(last) < c.Cooldown {
		return line, nil, domain.ErrDuplicateFulfillment
	}
	if card.remaining[line.UserBenefitItemID] < c.In.Quantity {
		return line, nil, domain.ErrNoRemainingQuota
	}
	return line, prov, nil
}

// decideVerify consumes the requested quantity of the card item, recorded
// on the card's stream under the command's record id.
func decideVerify(card *cardState, candidates []providerState, item itemState, c verifyUse) ([]events.Payload, error) {
	line, prov, err := checkVerify(card, candidates, item, c)
	if err != nil {
		return nil, err
	}
	points := c.In.PointsCode
	if prov.reg.PointsCode != nil {
		points = prov.reg.PointsCode
	}
	return []events.Payload{catalog.BenefitFulfilled{
		RecordID: c.RecordID, CardNumber: c.In.CardNumber, IssuerAppID: card.issued.IssuerAppID, UserBenefitItemID: line.UserBenefitItemID,
		BenefitItemID: line.BenefitItemID, BenefitItemName: item.name, ProviderID: prov.reg.ProviderID, ProviderAppID: c.AppID,
		Quantity: c.In.Quantity, Remaining: card.remaining[line.UserBenefitItemID] - c.In.Quantity, PointsCode: points, Remark: c.In.Remark, At: c.Now,
	}}, nil
}

// Verify consumes a benefit use: the card's remaining quantity is decided
// on the card's stream with its expected revision, so it never goes below
// zero however many verifications race, on any event store.
//
// A card is the calling app's to verify when it holds an item that one of
// the app's approved providers may verify, whoever issued it. Every other
// card (missing, or holding no such item) is CARD_NOT_FOUND alike, and
// SERVICE_PROVIDER_UNAUTHORIZED depends only on the caller's providers and
// the request, never on the card, so neither answer reveals another app's card.
func (b *Benefits) Verify(ctx context.Context, appID int64, in VerifyInput, meta Meta) (Verified, error) {
	if err := in.validate(); err != nil {
		return Verified{}, err
	}
	candidates, err := b.callerProviders(ctx, appID, in)
	if err != nil {
		return Verified{}, err
	}
	meta.AppID = appID
	r := &verifyReq{c: verifyUse{AppID: appID, In: in, Cooldown: b.cooldown}, candidates: candidates, meta: meta, wake: make(chan struct{}, 1)}
	if q, lead := b.enqueue(in.CardNumber, r); !lead {
		<-r.wake
		if !r.finished {
			b.lead(ctx, in.CardNumber, q) // handed the lead, with r still waiting
		}
	} else {
		b.lead(ctx, in.CardNumber, q)
	}
	return r.out, r.err
}

// maxVerifyBatch bounds the uses one append of a card carries.
const maxVerifyBatch = 64

// cardQueue holds a card's waiting verifications; while one of them leads
// (running), the others wait to be answered or handed the lead. It stands
// where a per-card lock stood: on a hot card each use waited for its own
// append's commit, so uses went one commit at a time; now the uses that
// queued during one commit go in the next one together.
type cardQueue struct {
	pending []*verifyReq
	running bool
}

// verifyReq is one verify-use waiting in its card's queue, and its answer.
type verifyReq struct {
	c          verifyUse
	candidates []providerState
	meta       Meta
	wake       chan struct{} // answered (finished) or handed the lead

	finished bool // set before wake is signalled, read after
	out      Verified
	err      error
	decided  *catalog.BenefitFulfilled // this attempt's accepted use, if any
}

func (r *verifyReq) finish(out Verified, err error) {
	r.out, r.err, r.finished = out, err, true
	r.wake <- struct{}{}
}

// enqueue adds r to its card's queue; lead reports that no verification
// of the card is leading, so the caller leads.
func (b *Benefits) enqueue(card string, r *verifyReq) (*cardQueue, bool) {
	b.queueMu.Lock()
	defer b.queueMu.Unlock()
	if b.queues == nil {
		b.queues = map[string]*cardQueue{}
	}
	q := b.queues[card]
	if q == nil {
		q = &cardQueue{}
		b.queues[card] = q
	}
	q.pending = append(q.pending, r)
	if q.running {
		return q, false
	}
	q.running = true
	return q, true
}

// lead decides one batch of the card's waiting verifications (the
// leader's own among them: it is queued until taken), then hands the lead
// to the first one still waiting, or ends the card's run when none is, so
// no leader serves others indefinitely.
func (b *Benefits) lead(ctx context.Context, card string, q *cardQueue) {
	b.queueMu.Lock()
	n := min(len(q.pending), maxVerifyBatch)
	batch := q.pending[:n:n]
	q.pending = q.pending[n:]
	b.queueMu.Unlock()
	// The batch answers other requests too: the leader's cancellation must
	// not fail theirs.
	b.verifyBatch(context.WithoutCancel(ctx), card, batch)
	b.queueMu.Lock()
	if len(q.pending) > 0 {
		q.pending[0].wake <- struct{}{} // not finished: it leads next
	} else {
		q.running = false
		delete(b.queues, card)
	}
	b.queueMu.Unlock()
}

// clone copies the card's maps, so a batch's tentative decisions leave the
// cached state as it was until their append succeeds.
func (s cardState) clone() cardState {
	return cardState{issued: s.issued, remaining: maps.Clone(s.remaining), lastUse: maps.Clone(s.lastUse)}
}

// verifyBatch decides the batch's uses in order against the card's state,
// each seeing the uses accepted before it (so quota and cooldown refuse as
// they would one at a time), and appends the accepted ones in one append
// after the card's version: each request gets its own answer, a refused
// use its own refusal; a conflict (another node used the card) decides the
// whole batch again. The first attempt decides on the cached card without
// reading it (cardAt), which the append's expected version checks.
func (b *Benefits) verifyBatch(ctx context.Context, card string, batch []*verifyReq) {
	stream := domain.CardStream(card)
	for attempt := 0; attempt < 10*maxAttempts; attempt++ {
		cached, read, err := b.cardAt(ctx, card, attempt == 0)
		if err != nil {
			for _, r := range batch {
				r.finish(Verified{}, err)
			}
			return
		}
		work := cached.state.clone()
		items := map[int64]itemState{} // read once per attempt (decideOne)
		var evs []events.Proposed
		for _, r := range batch {
			r.decided, r.err = nil, nil
			ev, err := b.decideOne(ctx, &work, items, r)
			if err != nil {
				r.err = err
				continue
			}
			p, err := b.reg.Encode(ev, r.meta.events())
			if err != nil {
				r.err = err
				continue
			}
			applied := ev
			applied.At = applied.At.Round(0) // as decoded: no monotonic reading
			work.apply(events.Envelope{Payload: &applied})
			r.decided = &ev
			evs = append(evs, p)
		}
		if len(evs) == 0 && !read {
			// Every use refused on the cached card, with no append to
			// tell whether another node used the card meanwhile: decide
			// again on its stream as read now, so each refusal is the one
			// the card's current state gives (a use elsewhere within the
			// cooldown is DUPLICATE_FULFILLMENT, not NO_REMAINING_QUOTA).
			continue
		}
		var res events.AppendResult
		if len(evs) > 0 {
			res, err = b.store.Append(ctx, stream, events.AfterVersion(cached.version), evs...)
			if events.IsConflict(err) {
				continue // another node verified this card meanwhile: decide again
			}
			if err == nil {
				// The append wrote exactly these events after version: the
				// cache takes them as read back, so the next batch decodes nothing.
				cached.state, cached.version = work, cached.version+uint64(len(evs))
			}
		}
		for _, r := range batch {
			switch {
			case r.decided == nil:
				r.finish(Verified{}, r.err)
			case err != nil:
				r.finish(Verified{}, err)
			default:
				ev := r.decided
				r.finish(Verified{RecordID: ev.RecordID, CardNumber: ev.CardNumber, BenefitItemName: ev.BenefitItemName, Quantity: ev.Quantity, Remaining: ev.Remaining,
					HolderName: work.issued.HolderName, HolderPhone: work.issued.HolderPhone, At: ev.At, Position: res.Position}, nil)
			}
		}
		return
	}
	for _, r := range batch {
		r.finish(Verified{}, domain.ErrContention)
	}
}

// decideOne decides one use against the batch's working state: refused
// before a record id is allocated; the id is kept across a conflict's
// retry (a conflicted append wrote nothing). items holds the benefit items
// this attempt has read: each is read once for the whole batch, after
// every request in it arrived, so each still sees the item as of its call,
// and a hot card's batch costs one item read instead of one per use.
func (b *Benefits) decideOne(ctx context.Context, work *cardState, items map[int64]itemState, r *verifyReq) (catalog.BenefitFulfilled, error) {
	line, _, err := verifyLine(work, r.candidates, r.c.In)
	if err != nil {
		return catalog.BenefitFulfilled{}, err
	}
	item, ok := items[line.BenefitItemID]
	if !ok {
		if item, err = b.currentItem(ctx, line.BenefitItemID); err != nil {
			return catalog.BenefitFulfilled{}, err
		}
		items[line.BenefitItemID] = item
	}
	r.c.Now = b.now().UTC()
	if _, _, err := checkVerify(work, r.candidates, item, r.c); err != nil {
		return catalog.BenefitFulfilled{}, err
	}
	if r.c.RecordID == 0 {
		if r.c.RecordID, err = b.ids.Next(ctx, "fulfillment"); err != nil {
			return catalog.BenefitFulfilled{}, err
		}
	}
	ps, err := decideVerify(work, r.candidates, item, r.c)
	if err != nil {
		return catalog.BenefitFulfilled{}, err
	}
	return ps[0].(catalog.BenefitFulfilled), nil
}

// ratingState is a fulfillment record's rating stream.
type ratingState struct{ rated bool }

func (s *ratingState) apply(env events.Envelope) {
	if _, ok := env.Payload.(*catalog.FulfillmentRated); ok {
		s.rated = true
	}
}

// validateRating keeps a rating within 1..5.
func validateRating(rating int) error {
	if rating < 1 || rating > 5 {
		v := &domain.ValidationError{}
		v.Add("rating", "must be between 1 and 5")
		return v
	}
	return nil
}

// rateFulfillment is Rate with the directory's answer gathered: which app
// issued the card of the record (found false: no such record).
type rateFulfillment struct {
	IssuerAppID int64 // the caller
	RecordID    int64
	Rating      int
	Issuer      int64
	Found       bool
}

// decideRate adds the caller's rating to a record of its own card, once.
func decideRate(st *ratingState, c rateFulfillment) ([]events.Payload, error) {
	if err := validateRating(c.Rating); err != nil {
		return nil, err
	}
	if !c.Found || c.Issuer != c.IssuerAppID {
		return nil, domain.ErrFulfillmentNotFound
	}
	if st.rated {
		return nil, domain.ErrAlreadyRated
	}
	return []events.Payload{catalog.FulfillmentRated{RecordID: c.RecordID, IssuerAppID: c.IssuerAppID, Rating: c.Rating}}, nil
}

// Rate adds the user's 1-5 rating to a fulfillment of the issuer app's card, once.
func (b *Benefits) Rate(ctx context.Context, issuerAppID, recordID int64, rating int, meta Meta) (events.Position, error) {
	if err := validateRating(rating); err != nil {
		return events.Position{}, err // before the directory is asked
	}
	c := rateFulfillment{IssuerAppID: issuerAppID, RecordID: recordID, Rating: rating}
	var err error
	if c.Issuer, c.Found, err = b.providers.FulfillmentIssuer(ctx, recordID); err != nil {
		return events.Position{}, err
	}
	stream := "fulfillment-" + strconv.FormatInt(recordID, 10)
	var st ratingState
	version, _, err := b.load(ctx, stream, st.apply)
	if err != nil {
		return events.Position{}, err
	}
	ps, err := decideRate(&st, c)
	if err != nil {
		return events.Position{}, err
	}
	meta.AppID = issuerAppID
	res, err := b.append(ctx, stream, version, meta, ps...)
	if events.IsConflict(err) {
		return events.Position{}, domain.ErrAlreadyRated
	}
	return res.Position, err
}

// isChannelPartner reports whether one of the app's providers (as loaded
// from their streams) is an approved CHANNEL_PARTNER.
func isChannelPartner(appID int64, providers []providerState) bool {
	return slices.ContainsFunc(providers, func(s providerState) bool {
		return s.reg != nil && s.reg.AppID == appID && s.reg.Type == ProviderChannelPartner && s.status == ProviderApproved
	})
}

// IsChannelPartner reports whether the app has an approved CHANNEL_PARTNER
// provider, which may issue cards in batches.
func (b *Benefits) IsChannelPartner(ctx context.Context, appID int64) (bool, error) {
	ids, err := b.providers.ProviderIDs(ctx, appID)
	if err != nil {
		return false, err
	}
	for _, id := range ids {
		s, err := b.currentProvider(ctx, id)
		if err != nil {
			return false, err
		}
		if isChannelPartner(appID, []providerState{s}) {
			return true, nil
		}
	}
	return false, nil
}

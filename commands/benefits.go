package commands

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
	cards     keyedMutex
	batches   keyedMutex // card batches being issued, by stream

	cacheMu sync.Mutex
	cache   map[string]*cachedCard // card aggregates, read incrementally
}

// cachedCard is a card's state as of version events; only the holder of
// the card's lock touches it.
type cachedCard struct {
	state   cardState
	version uint64
}

// maxCachedCards bounds the card cache; an evicted card is replayed once.
const maxCachedCards = 10000

// cardAt returns the card's current state, reading only the events appended
// since it was last seen (by this node or any other). Callers hold the card's lock.
func (b *Benefits) cardAt(ctx context.Context, number string) (*cachedCard, error) {
	b.cacheMu.Lock()
	if b.cache == nil {
		b.cache = map[string]*cachedCard{}
	}
	c := b.cache[number]
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
	recs, err := b.store.ReadStream(ctx, domain.CardStream(number), c.version, 0)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		env, err := b.reg.Decode(r)
		if err != nil {
			return nil, err
		}
		c.state.apply(env)
	}
	c.version += uint64(len(recs))
	return c, nil
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

func (b *Benefits) item(ctx context.Context, id int64) (itemState, uint64, events.Position, error) {
	var s itemState
	v, pos, err := b.load(ctx, domain.BenefitItemStream(id), s.apply)
	return s, v, pos, err
}

// CreateItem adds a benefit item, active.
func (b *Benefits) CreateItem(ctx context.Context, name string, meta Meta) (int64, events.Position, error) {
	v := &domain.ValidationError{}
	r := rules{v: v}
	if r.required("name", name) {
		r.maxLen("name", name, 64)
	}
	if err := v.Err(); err != nil {
		return 0, events.Position{}, err
	}
	id, err := b.ids.Next(ctx, "benefit_item")
	if err != nil {
		return 0, events.Position{}, err
	}
	res, err := b.append(ctx, domain.BenefitItemStream(id), 0, meta, catalog.BenefitItemCreated{BenefitItemID: id, Name: name})
	return id, res.Position, err
}

// SetItemStatus suspends or reactivates a benefit item.
func (b *Benefits) SetItemStatus(ctx context.Context, id int64, status string, meta Meta) (events.Position, error) {
	for attempt := 0; attempt < maxAttempts; attempt++ {
		s, version, pos, err := b.item(ctx, id)
		if err != nil {
			return events.Position{}, err
		}
		if s.id == 0 {
			return events.Position{}, domain.ErrBenefitItemNotFound
		}
		if s.status == status {
			return pos, nil
		}
		res, err := b.append(ctx, domain.BenefitItemStream(id), version, meta, catalog.BenefitItemStatusChanged{BenefitItemID: id, Status: status})
		if events.IsConflict(err) {
			continue
		}
		return res.Position, err
	}
	return events.Position{}, domain.ErrContention
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
}

// RegisterProvider records a provider pending review, linked to an app.
func (b *Benefits) RegisterProvider(ctx context.Context, in ProviderInput, meta Meta) (int64, events.Position, error) {
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
	if err := v.Err(); err != nil {
		return 0, events.Position{}, err
	}
	id, err := b.ids.Next(ctx, "provider")
	if err != nil {
		return 0, events.Position{}, err
	}
	meta.AppID = in.AppID
	res, err := b.append(ctx, domain.ProviderStream(id), 0, meta, catalog.ProviderRegistered{ProviderID: id, AppID: in.AppID, Name: in.Name, Type: in.Type, Contact: in.Contact, PointsCode: in.PointsCode})
	return id, res.Position, err
}

// ReviewProvider approves or rejects a pending provider.
func (b *Benefits) ReviewProvider(ctx context.Context, id int64, approve bool, notes string, meta Meta) (events.Position, error) {
	if utf8.RuneCountInString(notes) > 500 {
		v := &domain.ValidationError{}
		v.Add("notes", "must be at most 500 characters")
		return events.Position{}, v
	}
	s, version, err := b.provider(ctx, id)
	if err != nil {
		return events.Position{}, err
	}
	if s.reg == nil {
		return events.Position{}, domain.ErrProviderNotFound
	}
	if s.status != ProviderPending {
		return events.Position{}, domain.ErrProviderAlreadyReview
	}
	meta.AppID = s.reg.AppID
	res, err := b.append(ctx, domain.ProviderStream(id), version, meta, catalog.ProviderReviewed{ProviderID: id, Approved: approve, Notes: notes})
	if events.IsConflict(err) {
		return events.Position{}, domain.ErrProviderAlreadyReview
	}
	return res.Position, err
}

// ConfigureItems sets the benefit items a provider may verify.
func (b *Benefits) ConfigureItems(ctx context.Context, id int64, items []int64, meta Meta) (events.Position, error) {
	items = slices.Clone(items)
	slices.Sort(items)
	items = slices.Compact(items)
	for _, it := range items {
		s, _, _, err := b.item(ctx, it)
		if err != nil {
			return events.Position{}, err
		}
		if s.id == 0 {
			v := &domain.ValidationError{}
			v.Add("allowed_benefit_item_ids", fmt.Sprintf("benefit item %d does not exist", it))
			return events.Position{}, v
		}
	}
	for attempt := 0; attempt < maxAttempts; attempt++ {
		s, version, err := b.provider(ctx, id)
		if err != nil {
			return events.Position{}, err
		}
		if s.reg == nil {
			return events.Position{}, domain.ErrProviderNotFound
		}
		if s.reg.Type == ProviderChannelPartner && len(items) > 0 {
			v := &domain.ValidationError{}
			v.Add("allowed_benefit_item_ids", "CHANNEL_PARTNER providers never verify benefit uses")
			return events.Position{}, v
		}
		meta.AppID = s.reg.AppID
		res, err := b.append(ctx, domain.ProviderStream(id), version, meta, catalog.ProviderItemsConfigured{ProviderID: id, AllowedItemIDs: items})
		if events.IsConflict(err) {
			continue
		}
		return res.Position, err
	}
	return events.Position{}, domain.ErrContention
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

func (b *Benefits) validateCard(prefix string, c CardInput, v *domain.ValidationError) {
	r := rules{v: v, today: b.now().Format(time.DateOnly)}
	if c.CardNumber != "" && (utf8.RuneCountInString(c.CardNumber) != 15 || !isAlnum(c.CardNumber)) {
		v.Add(prefix+"card_number", "must be 15 letters or digits")
	}
	if r.required(prefix+"holder_name", c.HolderName) {
		r.maxLen(prefix+"holder_name", c.HolderName, 32)
	}
	if c.HolderPhone != nil {
		r.mobile(prefix+"holder_phone", *c.HolderPhone)
	}
	if !c.ExpiresAt.After(b.now()) {
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

func (b *Benefits) validateBatch(batch CardBatch) error {
	v := &domain.ValidationError{}
	if len(batch.Cards) == 0 || len(batch.Cards) > 100 {
		v.Add("cards", "must have 1 to 100 elements")
	}
	if utf8.RuneCountInString(batch.BatchID) > maxBatchID {
		v.Add("batch_id", fmt.Sprintf("must be at most %d characters", maxBatchID))
	}
	numbers := map[string]bool{}
	for i, c := range batch.Cards {
		b.validateCard(fmt.Sprintf("cards[%d].", i), c, v)
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
	if err := b.validateBatch(batch); err != nil {
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

// planBatch checks a new batch against the log and records its plan; a
// conflict means an identical batch planned first, whose plan then wins.
func (b *Benefits) planBatch(ctx context.Context, stream string, batch CardBatch, meta Meta) error {
	names := map[int64]bool{}
	for _, c := range batch.Cards {
		for _, it := range c.Items {
			if names[it.BenefitItemID] {
				continue
			}
			s, _, _, err := b.item(ctx, it.BenefitItemID)
			if err != nil {
				return err
			}
			if s.id == 0 {
				return fmt.Errorf("%w: %d", domain.ErrBenefitItemNotFound, it.BenefitItemID)
			}
			if s.status != ItemActive {
				return fmt.Errorf("%w: %d", domain.ErrBenefitItemInactive, it.BenefitItemID)
			}
			names[it.BenefitItemID] = true
		}
	}
	for _, c := range batch.Cards {
		if c.CardNumber == "" {
			continue
		}
		if recs, err := b.store.ReadStream(ctx, domain.CardStream(c.CardNumber), 0, 1); err != nil {
			return err
		} else if len(recs) > 0 {
			return domain.ErrCardNumberTaken // the number stays out of errors and logs
		}
	}
	plan := catalog.CardBatchPlanned{IssuerAppID: batch.IssuerAppID, Key: strings.TrimPrefix(stream, "cardbatch-"), Cards: make([]catalog.PlannedCard, len(batch.Cards))}
	for i, c := range batch.Cards {
		pc := catalog.PlannedCard{CardNumber: c.CardNumber, NumberChosen: c.CardNumber != ""}
		if !pc.NumberChosen {
			pc.CardNumber = randomCardNumber()
		}
		for range c.Items {
			id, err := b.ids.Next(ctx, "user_benefit_item")
			if err != nil {
				return err
			}
			pc.UserBenefitItemIDs = append(pc.UserBenefitItemIDs, id)
		}
		plan.Cards[i] = pc
	}
	_, err := b.append(ctx, stream, 0, meta, plan)
	if events.IsConflict(err) {
		return nil
	}
	return err
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
		if st.completed {
			return issuedCards(batch, st, pos), nil
		}
		retry := false
		for i, pc := range st.cards {
			issued, err := b.reg.Encode(cardIssued(batch, i, pc, meta), meta.events())
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
				if pc.NumberChosen {
					return nil, domain.ErrCardNumberTaken
				}
				// A generated number that another card took meanwhile: replace
				// it in the plan, so every retry agrees on the new one.
				_, err = b.append(ctx, stream, version, meta, catalog.CardBatchRenumbered{IssuerAppID: batch.IssuerAppID, Index: i, CardNumber: randomCardNumber()})
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
		done, err := b.reg.Encode(catalog.CardBatchCompleted{IssuerAppID: batch.IssuerAppID, Cards: len(st.cards)}, meta.events())
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

func cardIssued(batch CardBatch, i int, pc catalog.PlannedCard, meta Meta) catalog.CardIssued {
	c := batch.Cards[i]
	return catalog.CardIssued{
		CardNumber: pc.CardNumber, IssuerAppID: batch.IssuerAppID, HolderName: c.HolderName, HolderPhone: c.HolderPhone,
		ExpiresAt: c.ExpiresAt.UTC(), Items: cardLines(c, pc), IssuedBy: meta.Actor,
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

// callerProviders lists the approved providers through which the app may
// verify this request (matching service_provider_id and points_code).
func (b *Benefits) callerProviders(ctx context.Context, appID int64, in VerifyInput) ([]providerState, error) {
	ids, err := b.providers.ProviderIDs(ctx, appID)
	if err != nil {
		return nil, err
	}
	var out []providerState
	for _, id := range ids {
		if in.ServiceProviderID != nil && *in.ServiceProviderID != id {
			continue
		}
		s, _, err := b.provider(ctx, id)
		if err != nil {
			return nil, err
		}
		if s.reg == nil || s.reg.AppID != appID || s.status != ProviderApproved || s.reg.Type == ProviderChannelPartner {
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
	return out, nil
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
	if in.BenefitItemID != nil && !slices.ContainsFunc(candidates, func(p providerState) bool { return slices.Contains(p.allowed, *in.BenefitItemID) }) {
		// Decided from the caller's own configuration, before any card is read.
		return Verified{}, domain.ErrProviderUnauthorized
	}
	unlock := b.cards.lock(in.CardNumber)
	defer unlock()
	for attempt := 0; attempt < 10*maxAttempts; attempt++ {
		cached, err := b.cardAt(ctx, in.CardNumber)
		if err != nil {
			return Verified{}, err
		}
		st, version := &cached.state, cached.version
		if st.issued == nil {
			return Verified{}, domain.ErrCardNotFound
		}
		var line *catalog.CardLine
		for i, l := range st.issued.Items {
			if (in.UserBenefitItemID != nil && l.UserBenefitItemID == *in.UserBenefitItemID) || (in.BenefitItemID != nil && l.BenefitItemID == *in.BenefitItemID) {
				line = &st.issued.Items[i]
				break
			}
		}
		if line == nil {
			return Verified{}, domain.ErrCardNotFound
		}
		var prov *providerState
		for i := range candidates {
			if slices.Contains(candidates[i].allowed, line.BenefitItemID) {
				prov = &candidates[i]
				break
			}
		}
		if prov == nil {
			// A card item this app may not verify is not its card to see:
			// answering 403 here would tell it that the card exists.
			return Verified{}, domain.ErrCardNotFound
		}
		item, _, _, err := b.item(ctx, line.BenefitItemID)
		if err != nil {
			return Verified{}, err
		}
		if item.status != ItemActive {
			return Verified{}, domain.ErrBenefitItemInactive
		}
		now := b.now().UTC()
		if !now.Before(st.issued.ExpiresAt) {
			return Verified{}, domain.ErrCardExpired
		}
		if last, ok := st.lastUse[useKey(line.UserBenefitItemID, prov.reg.ProviderID)]; ok && b.cooldown > 0 && now.Sub(last) < b.cooldown {
			return Verified{}, domain.ErrDuplicateFulfillment
		}
		remaining := st.remaining[line.UserBenefitItemID]
		if remaining < in.Quantity {
			return Verified{}, domain.ErrNoRemainingQuota
		}
		recordID, err := b.ids.Next(ctx, "fulfillment")
		if err != nil {
			return Verified{}, err
		}
		points := in.PointsCode
		if prov.reg.PointsCode != nil {
			points = prov.reg.PointsCode
		}
		ev := catalog.BenefitFulfilled{
			RecordID: recordID, CardNumber: in.CardNumber, IssuerAppID: st.issued.IssuerAppID, UserBenefitItemID: line.UserBenefitItemID,
			BenefitItemID: line.BenefitItemID, BenefitItemName: item.name, ProviderID: prov.reg.ProviderID, ProviderAppID: appID,
			Quantity: in.Quantity, Remaining: remaining - in.Quantity, PointsCode: points, Remark: in.Remark, At: now,
		}
		meta.AppID = appID
		res, err := b.append(ctx, domain.CardStream(in.CardNumber), version, meta, ev)
		if events.IsConflict(err) {
			continue // another node verified this card meanwhile: decide again
		}
		if err != nil {
			return Verified{}, err
		}
		return Verified{RecordID: recordID, CardNumber: in.CardNumber, BenefitItemName: item.name, Quantity: in.Quantity, Remaining: ev.Remaining,
			HolderName: st.issued.HolderName, HolderPhone: st.issued.HolderPhone, At: now, Position: res.Position}, nil
	}
	return Verified{}, domain.ErrContention
}

// Rate adds the user's 1-5 rating to a fulfillment of the issuer app's card, once.
func (b *Benefits) Rate(ctx context.Context, issuerAppID, recordID int64, rating int, meta Meta) (events.Position, error) {
	if rating < 1 || rating > 5 {
		v := &domain.ValidationError{}
		v.Add("rating", "must be between 1 and 5")
		return events.Position{}, v
	}
	issuer, ok, err := b.providers.FulfillmentIssuer(ctx, recordID)
	if err != nil {
		return events.Position{}, err
	}
	if !ok || issuer != issuerAppID {
		return events.Position{}, domain.ErrFulfillmentNotFound
	}
	meta.AppID = issuerAppID
	res, err := b.append(ctx, "fulfillment-"+strconv.FormatInt(recordID, 10), 0, meta, catalog.FulfillmentRated{RecordID: recordID, IssuerAppID: issuerAppID, Rating: rating})
	if events.IsConflict(err) {
		return events.Position{}, domain.ErrAlreadyRated
	}
	return res.Position, err
}

// IsChannelPartner reports whether the app has an approved CHANNEL_PARTNER
// provider, which may issue cards in batches.
func (b *Benefits) IsChannelPartner(ctx context.Context, appID int64) (bool, error) {
	ids, err := b.providers.ProviderIDs(ctx, appID)
	if err != nil {
		return false, err
	}
	for _, id := range ids {
		s, _, err := b.provider(ctx, id)
		if err != nil {
			return false, err
		}
		if s.reg != nil && s.reg.AppID == appID && s.reg.Type == ProviderChannelPartner && s.status == ProviderApproved {
			return true, nil
		}
	}
	return false, nil
}

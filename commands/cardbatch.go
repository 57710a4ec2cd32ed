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
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

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
// batch complete, answering every card of the batch: the cards and the
// completion are one multi-stream append (executeParts), each event under
// an id derived from the batch, so a retry or a concurrent copy appends
// what is missing and finds the rest already written. A conflict means a
// planned number is held by another card (or a copy completed the batch
// first): the cards are read, and a generated number another card holds is
// replaced in the plan (decideTakenNumber) before the cards are decided
// again.
func (b *Benefits) finishBatch(ctx context.Context, stream string, batch CardBatch, meta Meta) ([]IssuedCard, error) {
	var st batchState
	var answer []IssuedCard
	conflicted := false
	res, appended, err := executeParts(ctx, b.streams, &meta, func() ([]decided, error) {
		st = batchState{}
		version, pos, err := b.load(ctx, stream, st.apply)
		if err != nil {
			return nil, err
		}
		if len(st.cards) != len(batch.Cards) {
			return nil, fmt.Errorf("card batch %s: plan holds %d cards, request %d", stream, len(st.cards), len(batch.Cards))
		}
		if st.completed {
			answer = issuedCards(batch, st, pos)
			return nil, nil
		}
		if conflicted {
			if version, err = b.renumberTaken(ctx, stream, &st, version, batch, meta); err != nil {
				return nil, err
			}
		}
		conflicted = true // the next try follows a conflict
		return decideFinishBatch(&st, stream, version, batch, meta.Actor), nil
	})
	switch {
	case err != nil:
		return nil, err
	case !appended:
		return answer, nil
	}
	return issuedCards(batch, st, res.Position), nil
}

// decideFinishBatch creates every planned card on its own stream (the
// store's no-stream append decides that the number is free) and completes
// the batch, after version, each event under an id derived from the
// batch.
func decideFinishBatch(st *batchState, stream string, version uint64, batch CardBatch, actor string) []decided {
	parts := make([]decided, 0, len(st.cards)+1)
	for i, pc := range st.cards {
		issued := withID{cardIssued(batch, i, pc, actor), batchEventID(stream, "card", i, pc.CardNumber)}
		parts = append(parts, decided{stream: domain.CardStream(pc.CardNumber), ps: []events.Payload{issued}})
	}
	done := withID{decideCompleteBatch(st, batch.IssuerAppID)[0], batchEventID(stream, "completed", version)}
	return append(parts, decided{stream: stream, version: version, ps: []events.Payload{done}})
}

// renumberTaken reads the planned cards' streams and replaces, in the plan,
// each generated number another card holds (a chosen one refuses the
// batch), appended after version before any card uses the new number; st
// and the returned version then include the renumbering.
func (b *Benefits) renumberTaken(ctx context.Context, stream string, st *batchState, version uint64, batch CardBatch, meta Meta) (uint64, error) {
	var ps []events.Payload
	for i, pc := range st.cards {
		recs, err := b.store.ReadStream(ctx, domain.CardStream(pc.CardNumber), 0, 1)
		if err != nil {
			return 0, err
		}
		if len(recs) == 0 || recs[0].ID == batchEventID(stream, "card", i, pc.CardNumber) {
			continue // free, or this batch's card, written before
		}
		renumber, err := decideTakenNumber(st, batch.IssuerAppID, i, randomCardNumber())
		if err != nil {
			return 0, err
		}
		ps = append(ps, renumber...)
	}
	if len(ps) == 0 {
		return version, nil
	}
	if _, err := b.append(ctx, stream, version, meta, ps...); err != nil {
		return 0, err // a conflict: decided again
	}
	for _, p := range ps {
		st.apply(events.Envelope{Payload: asDecoded(p)})
	}
	return version + uint64(len(ps)), nil
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

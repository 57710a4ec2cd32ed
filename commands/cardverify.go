package commands

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

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
	meta = meta.traced(ctx) // its use is decided in a batch led by another request
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
// after the card's version (executeBatch): each request gets its own
// answer, a refused use its own refusal; a conflict (another node used the
// card) decides the whole batch again. The first decision is made on the
// cached card without reading it (cards); if it accepts nothing, the batch
// is decided again on the card as read, so each refusal is the one the
// card's current state gives (a use elsewhere within the cooldown is
// DUPLICATE_FULFILLMENT, not NO_REMAINING_QUOTA).
func (b *Benefits) verifyBatch(ctx context.Context, card string, batch []*verifyReq) {
	var work *cardState
	pos, err := executeBatch(ctx, b.streams, cards{b, &work}, domain.CardStream(card), func(st *cardState) ([]events.Payload, error) {
		work = st
		items := map[int64]itemState{} // read once per decision (decideOne)
		var ps []events.Payload
		for _, r := range batch {
			r.decided, r.err = nil, nil
			ev, err := b.decideOne(ctx, st, items, r)
			if err != nil {
				r.err = err
				continue
			}
			st.apply(events.Envelope{Payload: asDecoded(ev)})
			r.decided = &ev
			ps = append(ps, forRequest{ev, r.meta})
		}
		return ps, nil
	})
	var failed *appendError // the store failed the append of the accepted uses
	appendFailed := errors.As(err, &failed)
	for _, r := range batch {
		switch {
		case err != nil && !appendFailed:
			r.finish(Verified{}, err)
		case r.decided == nil:
			r.finish(Verified{}, r.err)
		case appendFailed:
			r.finish(Verified{}, failed.err)
		default:
			ev := r.decided
			r.finish(Verified{RecordID: ev.RecordID, CardNumber: ev.CardNumber, BenefitItemName: ev.BenefitItemName, Quantity: ev.Quantity, Remaining: ev.Remaining,
				HolderName: work.issued.HolderName, HolderPhone: work.issued.HolderPhone, At: ev.At, Position: pos}, nil)
		}
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

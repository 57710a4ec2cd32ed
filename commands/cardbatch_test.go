package commands

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/bolt"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
)

// errTransient is what a flaky event store answers.
var errTransient = errors.New("transient store error")

// faultyStore fails its failAt-th append (counted from 1): before writing,
// or after writing (the append happened, the caller only sees the error).
type faultyStore struct {
	events.Store
	mu     sync.Mutex
	n      int
	failAt int
	after  bool
	hit    bool
}

func (f *faultyStore) Append(ctx context.Context, stream string, expected events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	f.mu.Lock()
	f.n++
	hit := f.n == f.failAt
	f.hit = f.hit || hit
	f.mu.Unlock()
	if hit && !f.after {
		return events.AppendResult{}, errTransient
	}
	res, err := f.Store.Append(ctx, stream, expected, evs...)
	if hit && err == nil {
		return events.AppendResult{}, errTransient
	}
	return res, err
}

// issuedInLog lists every card_number issued in the log, in log order.
func issuedInLog(t *testing.T, store events.Store) []catalog.CardIssued {
	t.Helper()
	reg := catalog.Registry()
	recs, err := store.ReadAll(context.Background(), events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []catalog.CardIssued
	for _, r := range recs {
		if r.Type != "benefit_card.issued" {
			continue
		}
		env, err := reg.Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, *env.Payload.(*catalog.CardIssued))
	}
	return out
}

// sameCards reports whether an answer names exactly the cards in the log.
func sameCards(t *testing.T, what string, got []IssuedCard, log []catalog.CardIssued) {
	t.Helper()
	if len(got) != len(log) {
		t.Fatalf("%s: answered %d cards, the log holds %d", what, len(got), len(log))
	}
	byNumber := map[string]catalog.CardIssued{}
	for _, c := range log {
		byNumber[c.CardNumber] = c
	}
	for _, c := range got {
		l, ok := byNumber[c.CardNumber]
		if !ok || !slices.Equal(l.Items, c.Items) {
			t.Fatalf("%s: answered card %s %+v, the log holds %+v", what, c.CardNumber, c.Items, l)
		}
	}
}

func batchFixture(t *testing.T, store events.Store) (*Benefits, int64) {
	t.Helper()
	reg := catalog.Registry()
	// Blocks of one id: every line reserves ids, so faults land there too.
	b := NewBenefits(store, reg, NewAllocator(store, reg, 1), time.Now, 0, staticProviders{})
	item, _, err := b.CreateItem(context.Background(), "annual check", Meta{})
	if err != nil {
		t.Fatal(err)
	}
	return b, item
}

func threeCards(item int64, chosen bool) []CardInput {
	var out []CardInput
	for i := range 3 {
		c := CardInput{HolderName: fmt.Sprintf("持卡人%d", i), ExpiresAt: time.Now().Add(24 * time.Hour).Truncate(time.Second),
			Items: []CardItemInput{{BenefitItemID: item, Quantity: int64(i + 1)}, {BenefitItemID: item, Quantity: 7}}}
		if chosen {
			c.CardNumber = fmt.Sprintf("BATCH%010d", i)
		}
		out = append(out, c)
	}
	return out
}

// A batch that fails at any append, before or after the write, and is then
// retried answers cards that are exactly the ones in the log: none issued
// twice, none the caller cannot see, no CARD_NUMBER_EXISTS.
func TestCardBatchRetryAfterAnyFault(t *testing.T) {
	embeddedStores(t, func(t *testing.T, fresh func() events.Store) {
		for _, chosen := range []bool{false, true} {
			for _, after := range []bool{false, true} {
				for failAt := 1; ; failAt++ {
					name := fmt.Sprintf("chosen=%v after=%v failAt=%d", chosen, after, failAt)
					store := &faultyStore{Store: fresh(), after: after}
					b, item := batchFixture(t, store)
					cards := threeCards(item, chosen)
					store.mu.Lock()
					store.n, store.failAt = 0, failAt
					store.mu.Unlock()
					first, err := b.IssueBatch(context.Background(), CardBatch{IssuerAppID: 1, Cards: cards}, Meta{})
					if !store.hit {
						if err != nil {
							t.Fatalf("%s: no fault, error %v", name, err)
						}
						sameCards(t, name+", unfaulted", first, issuedInLog(t, store))
						if failAt < 11 { // 6 id blocks, the plan, 3 cards, the completion
							t.Fatalf("%s: only %d appends were faulted", name, failAt-1)
						}
						break // every append of a batch has been faulted once
					}
					if err == nil {
						t.Fatalf("%s: the fault was swallowed", name)
					}
					again, err := b.IssueBatch(context.Background(), CardBatch{IssuerAppID: 1, Cards: cards}, Meta{})
					if err != nil {
						t.Fatalf("%s: retry: %v", name, err)
					}
					log := issuedInLog(t, store)
					sameCards(t, name+", retry", again, log)
					// A second handler (another node) retrying answers the same.
					other := NewBenefits(store, catalog.Registry(), NewAllocator(store, catalog.Registry(), 1), time.Now, 0, staticProviders{})
					third, err := other.IssueBatch(context.Background(), CardBatch{IssuerAppID: 1, Cards: cards}, Meta{})
					if err != nil || !slices.EqualFunc(third, again, func(a, b IssuedCard) bool { return a.CardNumber == b.CardNumber && slices.Equal(a.Items, b.Items) }) {
						t.Fatalf("%s: retry on another node answered %+v, %v; want %+v", name, third, err, again)
					}
					if n := len(issuedInLog(t, store)); n != 3 {
						t.Fatalf("%s: the log holds %d cards after retries, want 3", name, n)
					}
				}
			}
		}
	})
}

// embeddedStores runs a test that needs a fresh store per case on each
// embedded adapter (EventStoreDB keeps its streams between cases).
func embeddedStores(t *testing.T, test func(t *testing.T, fresh func() events.Store)) {
	t.Run("memory", func(t *testing.T) { test(t, func() events.Store { return memory.New() }) })
	t.Run("bolt", func(t *testing.T) {
		test(t, func() events.Store {
			s, err := bolt.Open(filepath.Join(t.TempDir(), "events.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}

// Identical batches at once, through separate handlers (nodes), issue one
// set of cards and all answer it.
func TestIdenticalCardBatchesAtOnceIssueOneSet(t *testing.T) {
	eventStores(t, func(t *testing.T, store events.Store) {
		_, item := batchFixture(t, store)
		cards := threeCards(item, false)
		const n = 8
		answers := make([][]IssuedCard, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			b := NewBenefits(store, catalog.Registry(), NewAllocator(store, catalog.Registry(), 1), time.Now, 0, staticProviders{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i], errs[i] = b.IssueBatch(context.Background(), CardBatch{IssuerAppID: 1, Cards: cards}, Meta{})
			}()
		}
		wg.Wait()
		log := issuedInLog(t, store)
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("batch %d: %v", i, errs[i])
			}
			sameCards(t, fmt.Sprintf("batch %d", i), answers[i], log)
		}
		// A distinct batch_id is a new batch with the same content.
		again, err := NewBenefits(store, catalog.Registry(), NewAllocator(store, catalog.Registry(), 1), time.Now, 0, staticProviders{}).
			IssueBatch(context.Background(), CardBatch{IssuerAppID: 1, BatchID: "second", Cards: cards}, Meta{})
		if err != nil || len(issuedInLog(t, store)) != 6 || again[0].CardNumber == answers[0][0].CardNumber {
			t.Fatalf("second batch_id: %+v, %v; log holds %d cards", again, err, len(issuedInLog(t, store)))
		}
	})
}

// A chosen number another batch issued fails the whole batch up front:
// nothing is appended.
func TestCardBatchWithATakenNumberIssuesNothing(t *testing.T) {
	store := memory.New()
	b, item := batchFixture(t, store)
	if _, err := b.IssueCards(context.Background(), 1, threeCards(item, true)[2:], Meta{}); err != nil {
		t.Fatal(err)
	}
	head, _ := store.Head(context.Background())
	_, err := b.IssueCards(context.Background(), 2, threeCards(item, true), Meta{})
	if !errors.Is(err, domain.ErrCardNumberTaken) {
		t.Fatalf("err = %v, want ErrCardNumberTaken", err)
	}
	if now, _ := store.Head(context.Background()); now != head {
		t.Fatalf("a refused batch appended events: head %v -> %v", head, now)
	}
	// Partners may not choose numbers at all, whatever the number.
	_, err = b.IssueBatch(context.Background(), CardBatch{IssuerAppID: 2, Cards: threeCards(item, true), PlatformNumbers: true}, Meta{})
	var v *domain.ValidationError
	if !errors.As(err, &v) {
		t.Fatalf("partner-chosen number: %v, want a validation error", err)
	}
}

// Given a planned batch whose generated number another card took before the
// batch's cards were written, when the batch is finished, then that card is
// issued under a new number recorded in the plan (the other card stays as
// it was) and the answer names exactly the batch's cards in the log; a
// retry answers the same cards. A chosen number taken meanwhile refuses the
// batch instead, and its completion is never appended.
func TestCardBatchRenumbersAGeneratedNumberTakenAfterItsPlan(t *testing.T) {
	eventStores(t, func(t *testing.T, store events.Store) {
		b, item := batchFixture(t, store)
		for _, chosen := range []bool{false, true} {
			batch := CardBatch{IssuerAppID: 1, BatchID: fmt.Sprint("renumber-", chosen), Cards: threeCards(item, false)}
			if chosen {
				batch.Cards[1].CardNumber = fmt.Sprintf("TAKEN%010d", 1)
			}
			stream := domain.CardBatchStream(1, batchKey(batch))
			if err := b.planBatch(ctx, stream, batch, Meta{}); err != nil {
				t.Fatal(err)
			}
			var plan batchState
			if _, _, err := b.load(ctx, stream, plan.apply); err != nil {
				t.Fatal(err)
			}
			taken := plan.cards[1].CardNumber
			other := catalog.CardIssued{CardNumber: taken, IssuerAppID: 9, HolderName: "someone else", ExpiresAt: time.Now().Add(time.Hour).UTC()}
			if _, err := b.append(ctx, domain.CardStream(taken), 0, Meta{}, other); err != nil {
				t.Fatal(err)
			}
			got, err := b.IssueBatch(ctx, batch, Meta{})
			if chosen {
				if !errors.Is(err, domain.ErrCardNumberTaken) {
					t.Fatalf("chosen number taken: %v, want ErrCardNumberTaken", err)
				}
				var st batchState
				if _, _, err := b.load(ctx, stream, st.apply); err != nil || st.completed {
					t.Fatalf("refused batch completed: %v", err)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if got[1].CardNumber == taken {
				t.Fatalf("card 1 answered the taken number %s", taken)
			}
			var after batchState
			if _, _, err := b.load(ctx, stream, after.apply); err != nil || !after.completed || after.cards[1].CardNumber != got[1].CardNumber {
				t.Fatalf("plan after finishing: %+v, %v; want completed with card 1 as %s", after, err, got[1].CardNumber)
			}
			var ours []catalog.CardIssued
			for _, c := range issuedInLog(t, store) {
				if c.CardNumber == taken {
					if c.IssuerAppID != 9 || c.HolderName != "someone else" {
						t.Fatalf("the other card changed: %+v", c)
					}
					continue
				}
				ours = append(ours, c)
			}
			sameCards(t, "renumbered batch", got, ours)
			again, err := b.IssueBatch(ctx, batch, Meta{})
			if err != nil || again[1].CardNumber != got[1].CardNumber {
				t.Fatalf("retry answered %+v, %v; want card 1 as %s", again, err, got[1].CardNumber)
			}
		}
	})
}

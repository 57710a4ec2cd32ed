package commands

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events/catalog"
	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// BenchmarkVerifyPostgres: verify-use of one unit by parallel callers on
// one hot card or spread over 300 (as platformbench's verify-hot and
// verify-many scenarios), on the Postgres event store: the command's cost
// and waits without HTTP or read models. Needs PLATFORM_TEST_POSTGRES_URL.
//
//	go test -run '^$' -bench VerifyPostgres -cpu 32 ./commands/
func BenchmarkVerifyPostgres(b *testing.B) {
	b.Run("hot-card", func(b *testing.B) { benchmarkVerifyPostgres(b, 1) })
	b.Run("300-cards", func(b *testing.B) { benchmarkVerifyPostgres(b, 3) })
}

// benchmarkVerifyPostgres issues batches of 100 cards and verifies on
// the first card of each batch only (batches == 1: one hot card) or on all.
func benchmarkVerifyPostgres(b *testing.B, batches int) {
	ctx := context.Background()
	store, err := pgevents.Open(ctx, pgtest.New(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	reg := catalog.Registry()
	providers := staticProviders{}
	h := NewBenefits(store, reg, NewAllocator(store, reg, 100), time.Now, 0, providers)
	item, _, err := h.CreateItem(ctx, "annual check", Meta{})
	if err != nil {
		b.Fatal(err)
	}
	pid, _, err := h.RegisterProvider(ctx, ProviderInput{AppID: 2, Name: "clinic", Type: ProviderService, Contact: "x"}, Meta{})
	if err != nil {
		b.Fatal(err)
	}
	providers[2] = []int64{pid}
	if _, err := h.ReviewProvider(ctx, pid, true, "", Meta{}); err != nil {
		b.Fatal(err)
	}
	if _, err := h.ConfigureItems(ctx, pid, []int64{item}, Meta{}); err != nil {
		b.Fatal(err)
	}
	in := make([]CardInput, 100)
	for i := range in {
		in[i] = CardInput{HolderName: "李雷", ExpiresAt: time.Now().Add(time.Hour), Items: []CardItemInput{{BenefitItemID: item, Quantity: 100000}}}
	}
	var cards []string
	for range batches {
		issued, err := h.IssueCards(ctx, 1, in, Meta{})
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range issued {
			cards = append(cards, c.CardNumber)
		}
		if batches == 1 {
			cards = cards[:1]
		}
	}
	var next atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			card := cards[int(next.Add(1))%len(cards)]
			if _, err := h.Verify(ctx, 2, VerifyInput{CardNumber: card, BenefitItemID: &item, Quantity: 1}, Meta{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

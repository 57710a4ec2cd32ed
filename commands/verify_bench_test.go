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

// BenchmarkVerifyManyCardsPostgres: verify-use of one unit by parallel
// callers, each on a card of its own drawn from 256 (as platformbench's
// many-cards scenario), on the Postgres event store: the command's cost and
// waits without HTTP or read models. Needs PLATFORM_TEST_POSTGRES_URL.
//
//	go test -run '^$' -bench VerifyManyCardsPostgres -cpu 32 ./commands/
func BenchmarkVerifyManyCardsPostgres(b *testing.B) {
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
	for range 3 {
		issued, err := h.IssueCards(ctx, 1, in, Meta{})
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range issued {
			cards = append(cards, c.CardNumber)
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

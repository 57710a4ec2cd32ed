package bench_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

func verifyFixture(b *testing.B) (*harness.Platform, *harness.App, *harness.App, int64) {
	p := harness.Start(b, node.Config{DataDir: b.TempDir(), VerifyCooldown: -1, PartnerRateLimit: -1})
	p.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	station, partner, item := harness.BenefitSetup(b, p)
	return p, station, partner, item
}

// BenchmarkVerifyUseHotCard: every verification hits one card, whose
// queued uses are decided together and appended in one append after the
// card's version (commands.Benefits.verifyBatch).
func BenchmarkVerifyUseHotCard(b *testing.B) {
	_, station, partner, item := verifyFixture(b)
	card := partner.Issue(item, int64(b.N)+1, time.Now().Add(time.Hour).Format(time.RFC3339))
	body := map[string]any{"card_number": card, "benefit_item_id": item, "points_code": "P-1"}
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if res := station.Do("POST", "/open/v1/benefit-cards/verify-use", body); res.Status != 200 {
				b.Fatalf("verify: %d %s", res.Status, res.Raw)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "verifies/s")
}

// BenchmarkVerifyUseManyCards: each verification hits its own card.
func BenchmarkVerifyUseManyCards(b *testing.B) {
	p, station, partner, item := verifyFixture(b)
	_ = p
	cards := make([]string, 0, b.N)
	for len(cards) < b.N {
		cards = append(cards, partner.Issue(item, 1, time.Now().Add(time.Hour).Format(time.RFC3339)))
	}
	var next atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			card := cards[next.Add(1)-1]
			if res := station.Do("POST", "/open/v1/benefit-cards/verify-use", map[string]any{"card_number": card, "benefit_item_id": item, "points_code": "P-1"}); res.Status != 200 {
				b.Fatalf("verify: %d %s", res.Status, res.Raw)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "verifies/s")
}

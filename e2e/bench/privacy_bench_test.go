package bench_test

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// BenchmarkEncryptionRatio measures the cost of per-person encryption as a
// ratio that the machine's load cannot skew: two nodes, one with encryption
// on and one with it off (Config.PlaintextPersonalData), are driven in
// alternating rounds of 40 operations from 4 parallel clients, so both see
// the same background load. It reports each mode's rate and on/off, the
// number to keep at 0.8 or more (encryption may cost at most a fifth
// of the rate). The embedded case uses the
// bbolt log, key log and in-memory read models; the postgres case the
// Postgres event store, key table and read models (skipped without
// PLATFORM_TEST_POSTGRES_URL).
//
//	go test -run '^$' -bench EncryptionRatio -benchtime 400x ./e2e/bench
func BenchmarkEncryptionRatio(b *testing.B) {
	for _, store := range []string{"embedded", "postgres"} {
		b.Run("register/"+store, func(b *testing.B) {
			on, off := ratioPlatforms(b, store)
			var seq atomic.Int64
			op := func(p *harness.Platform, a *harness.App) error {
				res := p.Send(a.Request("POST", "/open/v1/channel/users", harness.RegisterBody(fmt.Sprintf("bench-%d", seq.Add(1))), time.Now()))
				if res.Status != http.StatusCreated {
					return fmt.Errorf("register: %d %s", res.Status, res.Raw)
				}
				return nil
			}
			alternate(b, on, off, op, "registers/s")
		})
		b.Run("snapshot/"+store, func(b *testing.B) {
			on, off := ratioPlatforms(b, store)
			paths := map[*harness.Platform]string{}
			for _, pa := range [][2]any{{on[0], on[1]}, {off[0], off[1]}} {
				p, a := pa[0].(*harness.Platform), pa[1].(*harness.App)
				var reg harness.RegisterData
				p.Send(a.Request("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), time.Now())).Data(b, &reg)
				paths[p] = fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
			}
			op := func(p *harness.Platform, a *harness.App) error {
				if res := p.Send(a.Request("GET", paths[p], nil, time.Now())); res.Status != http.StatusOK {
					return fmt.Errorf("snapshot: %d %s", res.Status, res.Raw)
				}
				return nil
			}
			alternate(b, on, off, op, "reads/s")
		})
	}
}

// ratioPlatforms starts the encrypted and the plaintext node of one kind.
func ratioPlatforms(b *testing.B, store string) (on, off [2]any) {
	mk := func(plaintext bool) [2]any {
		cfg := node.Config{DataDir: b.TempDir(), PartnerRateLimit: -1, PlaintextPersonalData: plaintext}
		if store == "postgres" {
			db := pgtest.New(b)
			cfg.EventStoreURL, cfg.PostgresURL = db, db
		}
		p := harness.Start(b, cfg)
		p.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
		return [2]any{p, p.CreateApp("bench")}
	}
	return mk(false), mk(true)
}

// alternate runs b.N operations on each node in alternating rounds and
// reports both rates and their ratio.
func alternate(b *testing.B, on, off [2]any, op func(*harness.Platform, *harness.App) error, unit string) {
	const round, clients = 40, 4
	var spent [2]time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; done += round {
		n := min(round, b.N-done)
		for i, pa := range [][2]any{on, off} {
			if done/round%2 == 1 { // alternate which goes first
				pa = [][2]any{off, on}[i]
				i = 1 - i
			}
			p, a := pa[0].(*harness.Platform), pa[1].(*harness.App)
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			t0 := time.Now()
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(n) {
						if err := op(p, a); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			spent[i] += time.Since(t0)
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
		}
	}
	rateOn, rateOff := float64(b.N)/spent[0].Seconds(), float64(b.N)/spent[1].Seconds()
	b.ReportMetric(rateOn, "on-"+unit)
	b.ReportMetric(rateOff, "off-"+unit)
	b.ReportMetric(rateOn/rateOff, "on/off")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkRebuildDecrypt rebuilds every read model from the log
// (POST /admin/v1/projections/read_models/rebuild, then waiting until the
// runners caught up) on a node with per-person encryption on, where every
// personal field is decrypted on the way, and on one with it off, seeded
// alike with 150 full registers and a profile change each, alternating
// the two. It reports the log's events per second each way (each read model
// reads the whole log) and on/off. The node's key cache is warm, as on a
// running node; after a restart each person's first event costs one key
// read (an in-memory index for the key log, one query for Postgres).
//
//	go test -run '^$' -bench RebuildDecrypt -benchtime 4x ./e2e/bench
func BenchmarkRebuildDecrypt(b *testing.B) {
	for _, store := range []string{"embedded", "postgres"} {
		b.Run(store, func(b *testing.B) {
			on, off := ratioPlatforms(b, store)
			var spent [2]time.Duration
			var logEvents [2]int
			for i, pa := range [][2]any{on, off} {
				p, a := pa[0].(*harness.Platform), pa[1].(*harness.App)
				for u := range 150 {
					var reg harness.RegisterData
					p.Send(a.Request("POST", "/open/v1/channel/users", harness.RegisterBody(fmt.Sprintf("r-%d", u)), time.Now())).Data(b, &reg)
					if res := p.Send(a.Request("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID), map[string]any{"nickname": "小六"}, time.Now())); res.Status != http.StatusOK {
						b.Fatalf("patch: %d %s", res.Status, res.Raw)
					}
				}
				if err := p.Node.WaitCaughtUp(b.Context()); err != nil {
					b.Fatal(err)
				}
				logEvents[i] = p.EventCount()
			}
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				order := []int{0, 1}
				if n%2 == 1 {
					order = []int{1, 0}
				}
				for _, i := range order {
					p := [][2]any{on, off}[i][0].(*harness.Platform)
					t0 := time.Now()
					if res := p.Admin("POST", "/admin/v1/projections/read_models/rebuild", nil); res.Status != http.StatusAccepted {
						b.Fatalf("rebuild: %d %s", res.Status, res.Raw)
					}
					if err := p.Node.WaitCaughtUp(b.Context()); err != nil {
						b.Fatal(err)
					}
					spent[i] += time.Since(t0)
				}
			}
			rateOn := float64(logEvents[0]*b.N) / spent[0].Seconds()
			rateOff := float64(logEvents[1]*b.N) / spent[1].Seconds()
			b.ReportMetric(float64(logEvents[0]), "log-events")
			b.ReportMetric(rateOn, "on-events/s")
			b.ReportMetric(rateOff, "off-events/s")
			b.ReportMetric(rateOn/rateOff, "on/off")
			b.ReportMetric(0, "ns/op")
		})
	}
}

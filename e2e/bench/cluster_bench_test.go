package bench_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BenchmarkSnapshotReadFloor measures what cross-node read-your-writes
// costs a snapshot read on the Postgres event store and read models: with
// the head floor (each read reads the log's head and waits for the users
// read model to reach it) against per-node watermarks only, on the same node in
// the same run. Report the ratio of the two reads/s.
//
//	PLATFORM_TEST_POSTGRES_URL=... go test -run '^$' -bench SnapshotReadFloor -benchtime 3s ./e2e/bench
func BenchmarkSnapshotReadFloor(b *testing.B) {
	db := pgtest.New(b)
	p := harness.Start(b, harness.ClusterConfig(b, db, "bench", 10*time.Second))
	p.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	a := p.CreateApp("bench")
	var reg harness.RegisterData
	p.Send(a.Request("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), time.Now())).Data(b, &reg)
	path := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
	read := func(b *testing.B) {
		b.SetParallelism(4)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if res := p.Send(a.Request("GET", path, nil, time.Now())); res.Status != http.StatusOK {
					b.Fatalf("snapshot: %d %s", res.Status, res.Raw)
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
	}
	// Alternated rounds: the machine is shared, so compare neighbours.
	for round := 1; round <= 3; round++ {
		b.Run(fmt.Sprintf("head-floor/%d", round), read)
		b.Run(fmt.Sprintf("local-watermarks/%d", round), func(b *testing.B) {
			p.Node.Watermarks.FollowHead(nil)
			defer p.Node.Watermarks.FollowHead(p.Node.Events.Head)
			read(b)
		})
	}
}

// BenchmarkSnapshotPostgres is the signed snapshot read on the Postgres
// event store and read models (one database), 32 clients, against a
// pgbench -S-like baseline in the same run: 32 clients reading one row by
// primary key from a 100,000-row table through a pgx pool of 32
// connections. Rounds alternate (the machine is shared); report the ratio
// of neighbours' reads/s.
//
//	PLATFORM_TEST_POSTGRES_URL=... go test -run '^$' -bench SnapshotPostgres -benchtime 3s ./e2e/bench
func BenchmarkSnapshotPostgres(b *testing.B) {
	db := pgtest.New(b)
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(db)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = benchClients
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE bench_accounts (aid int PRIMARY KEY, bid int, abalance int, filler char(84));
INSERT INTO bench_accounts SELECT g, 1, 0, '' FROM generate_series(1, 100000) g; ANALYZE bench_accounts`); err != nil {
		b.Fatal(err)
	}
	p := harness.Start(b, harness.ClusterConfig(b, db, "bench", 10*time.Second))
	p.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	a := p.CreateApp("bench")
	var reg harness.RegisterData
	p.Send(a.Request("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), time.Now())).Data(b, &reg)
	path := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
	for round := 1; round <= 3; round++ {
		b.Run(fmt.Sprintf("pgbench-S/%d", round), func(b *testing.B) {
			var seed atomic.Int64
			setClients(b)
			measureCPU(b)
			b.RunParallel(func(pb *testing.PB) {
				rnd := rand.New(rand.NewPCG(uint64(seed.Add(1)), 1))
				var balance int
				for pb.Next() {
					if err := pool.QueryRow(ctx, `SELECT abalance FROM bench_accounts WHERE aid = $1`, rnd.IntN(100000)+1).Scan(&balance); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tps")
		})
		b.Run(fmt.Sprintf("snapshot/%d", round), func(b *testing.B) {
			setClients(b)
			measureCPU(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if res := p.Send(a.Request("GET", path, nil, time.Now())); res.Status != http.StatusOK {
						b.Fatalf("snapshot: %d %s", res.Status, res.Raw)
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
		})
	}
}

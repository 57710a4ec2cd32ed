package bench_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/bolt"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// The benchmarks measure embedded mode over real HTTP. Compare them with the
// baselines of the same run, not across runs: these machines are shared.
//
//	go test -run '^$' -bench . -benchtime 3s ./e2e/bench

// benchClients is how many concurrent clients the write and read benchmarks
// run, as scripts/bench.sh runs them.
const benchClients = 32

// cpuTime is the process's user+system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measureCPU starts the timer and reports, when the benchmark ends, the
// CPU time the whole process (server, client and background work) spent
// per operation: on a machine shared with other work, throughput follows
// the CPU share the process gets, while CPU per operation does not.
func measureCPU(b *testing.B) {
	b.ResetTimer()
	start := cpuTime(b)
	b.Cleanup(func() {
		if b.N > 0 {
			b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/float64(b.N), "cpu-µs/op")
		}
	})
}

// latencies collects request latencies from parallel clients and reports
// their p50 and p99 when the benchmark ends.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

// add records one request that started at start.
func (l *latencies) add(start time.Time) {
	d := time.Since(start)
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// report adds p50-ms and p99-ms to the benchmark's metrics.
func (l *latencies) report(b *testing.B) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return
	}
	slices.Sort(l.d)
	at := func(q float64) float64 { return float64(l.d[int(q*float64(len(l.d)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// setClients makes RunParallel run benchClients goroutines.
func setClients(b *testing.B) {
	b.SetParallelism((benchClients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
}

// BenchmarkBaselineAppend is the raw rate of the embedded log: single-event
// appends to distinct streams from parallel writers, as registers make them.
func BenchmarkBaselineAppend(b *testing.B) {
	store, err := bolt.Open(filepath.Join(b.TempDir(), "events.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	var n atomic.Int64
	setClients(b)
	measureCPU(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			ev := events.Proposed{ID: uuid.NewString(), Type: "bench", Data: []byte(`{"n":1}`)}
			if _, err := store.Append(context.Background(), fmt.Sprintf("bench-%d", i), events.NoStream(), ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}

// benchPlatform starts an embedded node whose client skips the OpenAPI
// validation (it would dominate the cost) and keeps connections alive.
func benchPlatform(b *testing.B) (*harness.Platform, *harness.App) {
	return benchPlatformWith(b, false)
}

// benchPlatformWith is benchPlatform with per-person encryption off when
// plaintext is set (to measure its cost).
func benchPlatformWith(b *testing.B, plaintext bool) (*harness.Platform, *harness.App) {
	p := harness.Start(b, node.Config{DataDir: b.TempDir(), PartnerRateLimit: -1, PlaintextPersonalData: plaintext})
	p.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	return p, p.CreateApp("bench")
}

// BenchmarkRegisterHTTP registers distinct users over HTTP from parallel
// clients: signature check, two event-store appends and the JSON edge.
func BenchmarkRegisterHTTP(b *testing.B) {
	p, a := benchPlatform(b)
	var n atomic.Int64
	var lat latencies
	setClients(b)
	measureCPU(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprintf("bench-%d", n.Add(1))
			start := time.Now()
			res := p.Send(a.Request("POST", "/open/v1/channel/users", map[string]any{"channel_user_id": id, "user": map[string]any{"name": "n", "phone": "13812345678"}}, start))
			if res.Status != http.StatusCreated {
				b.Fatalf("register: %d %s", res.Status, res.Raw)
			}
			lat.add(start)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "registers/s")
	lat.report(b)
}

// BenchmarkSnapshotHTTP reads one user's full snapshot over HTTP.
func BenchmarkSnapshotHTTP(b *testing.B) {
	p, a := benchPlatform(b)
	var reg harness.RegisterData
	p.Send(a.Request("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), time.Now())).Data(b, &reg)
	path := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
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
}

// BenchmarkBaselineSnapshotStore is the same snapshot read done directly on
// the in-memory read model, without HTTP, signature or JSON.
func BenchmarkBaselineSnapshotStore(b *testing.B) {
	p, a := benchPlatform(b)
	var reg harness.RegisterData
	p.Send(a.Request("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), time.Now())).Data(b, &reg)
	if err := p.Node.WaitCaughtUp(context.Background()); err != nil {
		b.Fatal(err)
	}
	store := p.Node.ReadModel
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := store.User(ctx, a.ID, reg.OpenUserID); err != nil {
				b.Fatal(err)
			}
			if _, err := store.Groups(ctx, a.ID, reg.OpenUserID); err != nil {
				b.Fatal(err)
			}
			if _, err := store.Members(ctx, a.ID, reg.OpenUserID, time.Time{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
}

// reportFixture starts a node (limit raised: the benchmark measures the
// pull itself) with one report of awkward raw_data, already viewed.
func reportFixture(b *testing.B) (*harness.Platform, *harness.App, int64) {
	p := harness.Start(b, node.Config{DataDir: b.TempDir(), ReportPullLimit: 1 << 30, PartnerRateLimit: -1})
	p.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	a := p.CreateApp("bench")
	var reg harness.RegisterData
	p.Send(a.Request("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), time.Now())).Data(b, &reg)
	var created struct {
		ID int64 `json:"id"`
	}
	p.Ingest(p.Node.AdminToken, "POST", "/admin/v1/health-reports", harness.ReportBody(reg.OpenUserID, "")).Data(b, &created)
	a.Pull(created.ID)
	return p, a, created.ID
}

// BenchmarkReportPullHTTP pulls one report over HTTP with scheme H (signature,
// nonce check, rate limiter, read model, byte-exact raw_data).
func BenchmarkReportPullHTTP(b *testing.B) {
	p, a, id := reportFixture(b)
	path := fmt.Sprintf("/open/v1/health-reports/%d", id)
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if res := p.Send(a.RequestH("GET", path, nil, harness.FreshNonce(), time.Now())); res.Status != http.StatusOK {
				b.Fatalf("pull: %d %s", res.Status, res.Raw)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pulls/s")
}

// BenchmarkBaselineReportStore is the same read done directly on the read model.
func BenchmarkBaselineReportStore(b *testing.B) {
	p, a, id := reportFixture(b)
	store := p.Node.ReadModel
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := store.Report(ctx, a.ID, id); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
}

// BenchmarkEncryption registers full users (profile, group, two members with
// an id number: eleven personal fields sealed per register) and reads their
// snapshots with per-person encryption on and off, in the same run:
//
//	go test -run '^$' -bench Encryption -benchtime 3s ./e2e/bench
func BenchmarkEncryption(b *testing.B) {
	for _, mode := range []struct {
		name      string
		plaintext bool
	}{{"on", false}, {"off", true}} {
		b.Run("register/encryption="+mode.name, func(b *testing.B) {
			p, a := benchPlatformWith(b, mode.plaintext)
			var n atomic.Int64
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					res := p.Send(a.Request("POST", "/open/v1/channel/users", harness.RegisterBody(fmt.Sprintf("bench-%d", n.Add(1))), time.Now()))
					if res.Status != http.StatusCreated {
						b.Fatalf("register: %d %s", res.Status, res.Raw)
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "registers/s")
		})
		b.Run("snapshot/encryption="+mode.name, func(b *testing.B) {
			p, a := benchPlatformWith(b, mode.plaintext)
			var reg harness.RegisterData
			p.Send(a.Request("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), time.Now())).Data(b, &reg)
			path := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
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
		})
	}
}

// BenchmarkMemberUpsertHTTP upserts family members from 32 parallel clients,
// each on its own user (as scripts/bench.sh does): signature check, the
// user's cached aggregate, an id allocation and one append per request.
// Each client cycles over 20 members with a changing name, so every request
// appends (the first 20 create, the rest update).
func BenchmarkMemberUpsertHTTP(b *testing.B) {
	p, a := benchPlatform(b)
	const clients = benchClients
	users := make([]int64, clients)
	for i := range users {
		var reg harness.RegisterData
		p.Send(a.Request("POST", "/open/v1/channel/users", harness.RegisterBody(fmt.Sprintf("u-%d", i)), time.Now())).Data(b, &reg)
		users[i] = reg.OpenUserID
	}
	var next atomic.Int64
	var lat latencies
	setClients(b)
	measureCPU(b)
	b.RunParallel(func(pb *testing.PB) {
		user := users[int(next.Add(1)-1)%clients]
		path := fmt.Sprintf("/open/v1/channel/users/%d/family-members", user)
		for i := 0; pb.Next(); i++ {
			body := map[string]any{"app_user_id": fmt.Sprintf("m-%d", i%20), "app_group_id": 10, "name": fmt.Sprintf("n-%d", i), "relationship": "SON"}
			start := time.Now()
			if res := p.Send(a.Request("POST", path, body, start)); res.Status != http.StatusOK && res.Status != http.StatusCreated {
				b.Fatalf("upsert member: %d %s", res.Status, res.Raw)
			}
			lat.add(start)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "upserts/s")
	lat.report(b)
}

// BenchmarkRegisterSerialHTTP registers distinct users over HTTP from one
// client: its p50 is the sum of the stages a register waits for (the
// signature's binding, the appends and their fsyncs), not queueing.
func BenchmarkRegisterSerialHTTP(b *testing.B) {
	p, a := benchPlatform(b)
	var lat latencies
	measureCPU(b)
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		res := p.Send(a.Request("POST", "/open/v1/channel/users", map[string]any{"channel_user_id": fmt.Sprintf("serial-%d", i), "user": map[string]any{"name": "n", "phone": "13812345678"}}, start))
		if res.Status != http.StatusCreated {
			b.Fatalf("register: %d %s", res.Status, res.Raw)
		}
		lat.add(start)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "registers/s")
	lat.report(b)
}

// BenchmarkSnapshotHTTPPostgres reads snapshots over HTTP on the Postgres
// event store and read models, scheme M signed, cycling over users as
// scripts/bench.sh's snapshot row does (so most reads are on another route
// than their signature's first use, with its grace marker). Allocations
// (-benchmem) count the client's as well as the platform's; compare runs of
// one machine only.
func BenchmarkSnapshotHTTPPostgres(b *testing.B) {
	db := pgtest.New(b)
	p := harness.Start(b, node.Config{DataDir: b.TempDir(), EventStoreURL: db, PostgresURL: db, PartnerRateLimit: -1})
	p.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	a := p.CreateApp("bench")
	paths := make([]string, 200)
	for i := range paths {
		var reg harness.RegisterData
		p.Send(a.Request("POST", "/open/v1/channel/users", harness.RegisterBody(fmt.Sprintf("u-%d", i)), time.Now())).Data(b, &reg)
		paths[i] = fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
	}
	var n atomic.Int64
	setClients(b)
	measureCPU(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			path := paths[int(n.Add(1))%len(paths)]
			if res := p.Send(a.Request("GET", path, nil, time.Now())); res.Status != http.StatusOK {
				b.Fatalf("snapshot: %d %s", res.Status, res.Raw)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
}

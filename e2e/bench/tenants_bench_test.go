package bench_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/e2e/internal/proc"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// BenchmarkTenants measures a register and a PATCH, each making one
// webhook delivery, on a node holding one app and on a node holding many
// apps (BENCH_TENANT_APPS, default 10,000), each app with its own endpoint
// (one loopback receiver, a path per app) and BENCH_TENANT_USERS users
// (default 10,000) spread over them, as the many-tenants scenario of
// cmd/platformbench sets them up. Each call goes to a random app of the
// population (a random user for the PATCH); an operation's measure ends
// when every delivery it made has arrived and the projections caught up,
// so allocs/op and cpu-µs/op (the whole process: server, clients,
// receiver) carry the deliveries' cost:
//
//	go test -run '^$' -bench Tenants -benchtime 2000x -benchmem ./e2e/bench
func BenchmarkTenants(b *testing.B) {
	many := proc.EnvInt(b, "BENCH_TENANT_APPS", 10000)
	users := proc.EnvInt(b, "BENCH_TENANT_USERS", 10000)
	for _, apps := range []int{1, many} {
		t := newTenants(b, apps, users)
		b.Run(fmt.Sprintf("register/apps=%d", apps), func(b *testing.B) {
			t.measure(b, func(w int) { t.register(b, rand.IntN(len(t.apps))) })
		})
		b.Run(fmt.Sprintf("patch/apps=%d", apps), func(b *testing.B) {
			var n atomic.Int64
			t.measure(b, func(w int) { t.patch(b, w, n.Add(1)) })
		})
		t.p.Stop()
	}
}

// tenantClients is how many clients call at once, as the many-tenants
// scenario's windows do.
const tenantClients = 8

// tenants is one population: its node, apps, users and receiver.
type tenants struct {
	p        *harness.Platform
	apps     []*harness.App
	users    []tenantUser
	received atomic.Int64
	sent     atomic.Int64
}

type tenantUser struct {
	app  int
	user int64
}

// newTenants starts a node as scripts/bench.sh's block 1c does (limiter
// on, read-model snapshots off) with apps apps and users users: apps
// first, then the users round-robin, then each app's endpoint, so the
// set-up makes no delivery.
func newTenants(b *testing.B, apps, users int) *tenants {
	p := harness.Start(b, node.Config{DataDir: b.TempDir(), PartnerRateLimit: 100_000_000, WebhookAllowLoopback: true,
		SnapshotEvents: 100_000_000, SnapshotInterval: 24 * time.Hour})
	p.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	t := &tenants{p: p, apps: make([]*harness.App, apps), users: make([]tenantUser, users)}
	rcv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.received.Add(1) }))
	b.Cleanup(rcv.Close)
	parallel(b, apps, func(i int) { t.apps[i] = p.CreateApp("tenant" + strconv.Itoa(i)) })
	parallel(b, users, func(i int) { t.users[i] = tenantUser{app: i % apps, user: t.registerOn(b, i%apps)} })
	parallel(b, apps, func(i int) {
		a := t.apps[i]
		p.ConfigureWebhook(a, rcv.URL+"/hook/"+strconv.FormatInt(a.ID, 10))
	})
	return t
}

// parallel runs f(0..n-1) on tenantClients goroutines.
func parallel(b *testing.B, n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range tenantClients {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && !b.Failed(); i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

// measure runs b.N calls of op from tenantClients workers and stops the
// timer once their deliveries arrived and the projections caught up.
func (t *tenants) measure(b *testing.B, op func(w int)) {
	var next atomic.Int64
	harness.ProfileMeasured(b)
	counted := harness.CallgrindMeasured(b)
	b.ReportAllocs()
	measureCPU(b)
	ru0, io0 := usage(b), writtenBytes(b)
	defer func() {
		ru, n := usage(b), float64(b.N)
		b.ReportMetric(float64(time.Duration(ru.Stime.Nano()-ru0.Stime.Nano()).Microseconds())/n, "sys-µs/op")
		b.ReportMetric(float64(ru.Minflt-ru0.Minflt)/n, "minflt/op")
		b.ReportMetric(float64(writtenBytes(b)-io0)/n, "written-B/op")
	}()
	var wg sync.WaitGroup
	for w := range tenantClients {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) && !b.Failed() {
				op(w)
			}
		})
	}
	wg.Wait()
	for deadline := time.Now().Add(2 * time.Minute); t.received.Load() < t.sent.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d deliveries arrived", t.received.Load(), t.sent.Load())
		}
	}
	if err := t.p.Node.WaitCaughtUp(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	counted()
}

// register registers a new user on app i, a delivery once the endpoints
// are set.
func (t *tenants) register(b *testing.B, i int) {
	t.registerOn(b, i)
	t.sent.Add(1)
}

func (t *tenants) registerOn(b *testing.B, i int) int64 {
	var reg harness.RegisterData
	res := t.p.Send(t.apps[i].Request("POST", "/open/v1/channel/users", map[string]any{
		"channel_user_id": "u" + strconv.FormatUint(rand.Uint64(), 36),
		"user":            map[string]any{"name": "n", "phone": "13812345678", "gender": "female", "birth_date": "1990-01-02"},
		"family_groups":   []any{map[string]any{"app_group_id": 1, "name": "home"}},
	}, time.Now()))
	if res.Status != http.StatusCreated {
		b.Fatalf("register: %d %s", res.Status, res.Raw)
	}
	res.Data(b, &reg)
	return reg.OpenUserID
}

// patch PATCHes a random user among those worker w owns (index w modulo
// the workers), so no user is written by two workers at once.
func (t *tenants) patch(b *testing.B, w int, n int64) {
	k := (len(t.users) - w + tenantClients - 1) / tenantClients
	u := t.users[w+tenantClients*rand.IntN(k)]
	res := t.p.Send(t.apps[u.app].Request("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", u.user), map[string]any{"nickname": fmt.Sprint("x", n)}, time.Now()))
	if res.Status != http.StatusOK {
		b.Fatalf("patch: %d %s", res.Status, res.Raw)
	}
	t.sent.Add(1)
}

// usage is the process's resource use so far: its CPU time in the kernel
// (writes, fsyncs, sockets, page faults) and its page faults (a heap
// growing, or given back and taken again), which no instruction count of
// the process sees.
func usage(b *testing.B) syscall.Rusage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru
}

// writtenBytes is what the process has written so far (files and sockets:
// /proc/self/io's wchar).
func writtenBytes(b *testing.B) int64 {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("/proc/self/io has no wchar")
	return 0
}

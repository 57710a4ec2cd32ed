package queryapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events/catalog"
	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi/edgetest"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
	ratelimitpg "github.com/healthtech/partner-open-platform/internal/ratelimit/postgres"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/postgres"
)

// BenchmarkReportPullOnPostgres pulls one report through the handler on a
// Postgres holding the log and the read models, with the pull's reads in
// separate round trips and in one, and reports the CPU per pull of this
// process (the platform's side, plus the benchmark's request building)
// and of the Postgres backends serving the benchmark's database (from
// /proc, so only with the server on this machine). The audit fact and the
// is_viewed mark go to fakes: both paths append them alike.
//
//	go test -run '^$' -bench ReportPullOnPostgres -benchtime 2000x ./queryapi
func BenchmarkReportPullOnPostgres(b *testing.B) {
	ctx := context.Background()
	db := pgtest.New(b)
	es, err := pgevents.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	defer es.Close()
	rm, err := postgres.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	defer rm.Close()
	rm.SeeHead(pgevents.HeadQuery, pgevents.PositionAt)
	reg := catalog.Registry()
	app, head := seedPulledReport(b, es, rm)
	marks := projections.NewWatermarks()
	marks.FollowHead(es.Head)
	runner := subscribe.NewRunner(es, reg, &follower{name: string(projections.ReadModelReports)}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = runner.Run(rctx) }()
	if err := runner.WaitFor(ctx, head); err != nil {
		b.Fatal(err)
	}
	dir := edgetest.NewDirectory(app)
	backends := func() int64 {
		rows, err := rm.Pool().Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		var total int64
		for rows.Next() {
			var pid int
			if err := rows.Scan(&pid); err != nil {
				b.Fatal(err)
			}
			raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				return -1 // the server is elsewhere
			}
			f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
			ut, _ := strconv.ParseInt(f[11], 10, 64)
			st, _ := strconv.ParseInt(f[12], 10, 64)
			total += ut + st // clock ticks of 10 ms
		}
		return total * 10_000 // µs
	}
	self := func() int64 {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return ru.Utime.Nano()/1000 + ru.Stime.Nano()/1000
	}
	const limit = 1_000_000_000
	for _, c := range []struct {
		name    string
		oneTrip bool
		batch   int // tokens per lease: 1 takes from the bucket on every pull
	}{{"separate", false, 1}, {"one-trip", true, 1}, {"one-trip-leased", true, limit / 600}} {
		name := c.name
		b.Run(name, func(b *testing.B) {
			bucket := ratelimitpg.New(rm.Pool()).Bucket("report_pull_"+name, limit, time.Minute)
			api := &ReportAPI{
				Reports: rm, Events: es, Runner: runner, SchemeH: auth.SchemeH{Apps: dir, Nonces: rm, Now: time.Now},
				Limiter: ratelimit.NewLeased(bucket, limit, time.Minute, c.batch, time.Minute), Views: &fakeViews{}, Apps: dir,
				Location: time.UTC, Now: time.Now, Watermarks: marks, Auditor: &fakeAuditor{},
			}
			if c.oneTrip {
				api.OneTrip = rm
			}
			handler := router(api.Routes())
			run := name + "-" + strconv.FormatInt(time.Now().UnixNano(), 36) // nonces unique across runs
			const path = "/open/v1/health-reports/21"
			pull := func(i int) {
				req := httptest.NewRequest("GET", path, nil)
				ts := strconv.FormatInt(time.Now().Unix(), 10)
				nonce := run + "-" + strconv.Itoa(i)
				req.Header.Set("X-App-Key", app.AppKey)
				req.Header.Set("X-Timestamp", ts)
				req.Header.Set("X-Nonce", nonce)
				req.Header.Set("X-Signature", auth.SignH(app.AppSecret, "GET", path, ts, nonce, nil))
				w := httptest.NewRecorder()
				handler.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("pull: %d %s", w.Code, w.Body)
				}
			}
			pull(-1) // prepares the statements
			pg0, me0 := backends(), self()
			b.ResetTimer()
			for i := range b.N {
				pull(i)
			}
			b.StopTimer()
			pg1, me1 := backends(), self()
			b.ReportMetric(float64(me1-me0)/float64(b.N), "proc-µs/op")
			if pg0 >= 0 && pg1 >= 0 {
				b.ReportMetric(float64(pg1-pg0)/float64(b.N), "pg-µs/op")
			}
		})
	}
}

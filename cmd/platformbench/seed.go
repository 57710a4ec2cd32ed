package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// seedFlags are seed's settings.
type seedFlags struct {
	dataDir, eventStoreURL, postgresURL, masterKey, summary string
	events                                                  uint64
	apps, workers                                           int
	webhookShare                                            float64
	settle                                                  time.Duration
}

// seedCmd writes a realistic log of about -events events into a data
// directory (and, with -eventstore-url, a Postgres event store) through a
// node opened in this process and its own command handlers: apps are made
// through the admin API, users through the register, member-upsert,
// profile-patch and report-upload commands, so every personal field is
// sealed with its person's data key and a rebuild decrypts as it would in
// production. A share of the apps has a webhook endpoint (a loopback
// receiver here answering 204), so the log holds deliveries as well.
func seedCmd(ctx context.Context, args []string, log io.Writer) error {
	f, err := parseSeedFlags(args)
	if err != nil {
		return err
	}
	say := func(format string, a ...any) { fmt.Fprintf(log, "platformbench seed: "+format+"\n", a...) }
	n, err := node.Open(ctx, node.Config{DataDir: f.dataDir, EventStoreURL: f.eventStoreURL, PostgresURL: f.postgresURL,
		MasterKey: f.masterKey, WebhookAllowLoopback: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return fmt.Errorf("open node: %w", err)
	}
	defer n.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: n.Handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	var received atomic.Int64
	hook, err := startSink(&received)
	if err != nil {
		return err
	}
	defer hook.Close()
	p := newPlatform("http://"+ln.Addr().String(), n.AdminToken, f.workers)
	began := time.Now()
	apps, err := seedApps(ctx, p, f, "http://"+hook.Addr().String()+"/hook")
	if err != nil {
		return err
	}
	say("%d apps (%d with an endpoint) in %s", len(apps), int(float64(len(apps))*f.webhookShare), time.Since(began).Round(time.Millisecond))
	ws := n.WriteSide()
	var users atomic.Int64
	var done atomic.Bool
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
	go func() {
		for range progress.C {
			if done.Load() {
				return
			}
			h, _ := n.Events.Head(ctx)
			say("%d users, log head %d, %.0f events/s", users.Load(), h.Commit, float64(h.Commit)/time.Since(began).Seconds())
		}
	}()
	err = forEach(ctx, f.workers, f.workers, func(ctx context.Context, w int) error {
		for i := w; ; i += f.workers {
			h, err := n.Events.Head(ctx)
			if err != nil {
				return err
			}
			if h.Commit >= f.events {
				return nil
			}
			if err := seedUser(ctx, ws, apps[i%len(apps)], i); err != nil {
				return fmt.Errorf("user %d: %w", i, err)
			}
			users.Add(1)
		}
	})
	done.Store(true)
	if err != nil {
		return err
	}
	h, _ := n.Events.Head(ctx)
	say("%d users, log head %d after %s; waiting for the deliveries", users.Load(), h.Commit, time.Since(began).Round(time.Second))
	if err := n.WaitCaughtUp(ctx); err != nil {
		return err
	}
	// The deliveries are made and sent after the events: wait until the
	// receiver has had nothing for the settle time.
	last, quiet := received.Load(), time.Now()
	for time.Since(quiet) < f.settle {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		if r := received.Load(); r != last {
			last, quiet = r, time.Now()
		}
	}
	h, _ = n.Events.Head(ctx)
	types, err := countTypes(ctx, n.StoredEvents)
	if err != nil {
		return err
	}
	say("done: %d users over %d apps, %d deliveries (%d sent to an endpoint), log head %d, %s", users.Load(), len(apps),
		types["webhook.delivery.created"], last, h.Commit, time.Since(began).Round(time.Second))
	return writeSeedSummary(f.summaryPath(), SeedSummary{Events: h.Commit, Users: users.Load(), Apps: len(apps),
		Endpoints: int(float64(len(apps)) * f.webhookShare), Deliveries: types["webhook.delivery.created"], Received: last, Types: types})
}

// countTypes counts the log's events by type (as stored: nothing to decrypt).
func countTypes(ctx context.Context, s events.Store) (map[string]int64, error) {
	types := map[string]int64{}
	var after events.Position
	for {
		page, err := s.ReadAll(ctx, after, 10_000)
		if err != nil {
			return nil, fmt.Errorf("count the log's events: %w", err)
		}
		if len(page) == 0 {
			return types, nil
		}
		for _, r := range page {
			types[r.Type]++
		}
		after = page[len(page)-1].Position
	}
}

// SeedSummary is what seed wrote; rebuild reads it to report memory per
// user and per delivery.
type SeedSummary struct {
	Events     uint64 `json:"events"`
	Users      int64  `json:"users"`
	Apps       int    `json:"apps"`
	Endpoints  int    `json:"endpoints"`
	Deliveries int64  `json:"deliveries"` // webhook.delivery.created: the feed's entries and the endpoints' deliveries
	Received   int64  `json:"received"`   // of them, sent to an endpoint and answered
	// Types counts the log's events by type.
	Types map[string]int64 `json:"types,omitempty"`
}

// summaryPath is where the summary goes: beside the data directory, never
// inside it (it is no part of the platform's data).
func (f seedFlags) summaryPath() string {
	if f.summary != "" {
		return f.summary
	}
	return filepath.Clean(f.dataDir) + ".seed.json"
}

func writeSeedSummary(path string, s SeedSummary) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("seed summary: %w", err)
	}
	return nil
}

func readSeedSummary(path string) (SeedSummary, error) {
	var s SeedSummary
	b, err := os.ReadFile(path)
	if err != nil {
		return s, fmt.Errorf("seed summary (run platformbench seed first): %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("seed summary %s: %w", path, err)
	}
	return s, nil
}

func parseSeedFlags(args []string) (seedFlags, error) {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	var f seedFlags
	fs.StringVar(&f.dataDir, "data", "", "the platform's data directory (PLATFORM_DATA_DIR); made if missing")
	fs.StringVar(&f.eventStoreURL, "eventstore-url", "", "Postgres event store (PLATFORM_EVENTSTORE_URL); empty: the embedded log in -data")
	fs.StringVar(&f.postgresURL, "postgres-url", "", "Postgres read models (PLATFORM_POSTGRES_URL); empty: embedded")
	fs.StringVar(&f.masterKey, "master-key", "", "master key (PLATFORM_MASTER_KEY); empty: <data>/master.key, made if missing")
	fs.Uint64Var(&f.events, "events", 1_000_000, "stop adding users once the log holds this many events")
	fs.IntVar(&f.apps, "apps", 20, "partner apps the users are spread over")
	fs.Float64Var(&f.webhookShare, "webhook-share", 0.1, "share of the apps with a webhook endpoint (every event type)")
	fs.IntVar(&f.workers, "workers", 32, "concurrent writers (appends share commits)")
	fs.StringVar(&f.summary, "summary", "", "where to write the counts of what was seeded (default: <data>.seed.json)")
	fs.DurationVar(&f.settle, "settle", 3*time.Second, "how long no delivery must arrive before seed ends")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if f.dataDir == "" {
		return f, errors.New("seed: -data is required")
	}
	if f.apps < 1 || f.workers < 1 || f.webhookShare < 0 || f.webhookShare > 1 {
		return f, errors.New("seed: -apps and -workers at least 1, -webhook-share in [0,1]")
	}
	return f, nil
}

// seedApps creates the apps through the admin API, the first
// webhookShare of them with url as their webhook endpoint.
func seedApps(ctx context.Context, p *Platform, f seedFlags, url string) ([]int64, error) {
	ids := make([]int64, f.apps)
	hooked := int(float64(f.apps) * f.webhookShare)
	err := forEach(ctx, min(f.workers, 8), f.apps, func(ctx context.Context, i int) error {
		a, err := p.createApp(ctx, "seed-"+strconv.Itoa(i))
		if err != nil {
			return fmt.Errorf("create app: %w", err)
		}
		ids[i] = a.ID
		if i < hooked {
			return p.admin(ctx, http.MethodPatch, "/admin/v1/apps/"+strconv.FormatInt(a.ID, 10), map[string]any{"webhook_url": url}, http.StatusOK, nil)
		}
		return nil
	})
	return ids, err
}

// seedUser is one user's life in the log: a register (one group, one
// member), a profile patch, every second user a second member, every
// third a health report.
func seedUser(ctx context.Context, ws node.WriteSide, app int64, i int) error {
	meta := commands.Meta{AppID: app, Actor: "app:" + strconv.FormatInt(app, 10), RequestID: "seed-" + strconv.Itoa(i)}
	phone := fmt.Sprintf("138%08d", i%100_000_000)
	res, err := ws.Users.Register(ctx, commands.Register{AppID: app, ChannelUserID: "seed-user-" + strconv.Itoa(i),
		User:    commands.UserInput{Name: "Li Lei", Phone: domain.Val(phone), Email: domain.Val("user" + strconv.Itoa(i) + "@example.com")},
		Groups:  []commands.GroupInput{{AppGroupID: 1, Name: "Home"}},
		Members: []commands.MemberInput{{AppUserID: "m1", AppGroupID: 1, Name: "Han Meimei", Relationship: "SPOUSE", Phone: domain.Val(phone)}}}, meta)
	if err != nil {
		return fmt.Errorf("register: %w", err)
	}
	u := res.OpenUserID
	if _, err := ws.Users.UpdateProfile(ctx, app, u, commands.ProfilePatch{Nickname: domain.Val("lei" + strconv.Itoa(i%1000)), Gender: domain.Val("male")}, meta); err != nil {
		return fmt.Errorf("profile patch: %w", err)
	}
	if i%2 == 0 {
		if _, err := ws.Users.UpsertMember(ctx, app, u, commands.MemberInput{AppUserID: "m2", AppGroupID: 1, Name: "Li Xiaoming", Relationship: "SON",
			BirthDate: domain.Val("2015-06-01"), Height: domain.Val[int64](130), Weight: domain.Val[int64](2800)}, meta); err != nil {
			return fmt.Errorf("member upsert: %w", err)
		}
	}
	if i%3 == 0 {
		raw, _ := json.Marshal(map[string]any{"data_source": "station", "data_type": "indicators", "indicators": []any{
			map[string]any{"code": "SBP", "value": 110 + i%30, "unit": "mmHg"}, map[string]any{"code": "DBP", "value": 70 + i%15, "unit": "mmHg"},
			map[string]any{"code": "HR", "value": 60 + i%40, "unit": "bpm"}}})
		if _, err := ws.Reports.Create(ctx, commands.ReportInput{OpenUserID: u, ReportType: domain.Val("BLOOD_PRESSURE"),
			RequestReportID: domain.Val("seed-" + strconv.Itoa(i)), RawData: raw}, "uploader:seed", commands.Meta{Actor: "uploader:seed"}); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	return nil
}

// sink is a webhook endpoint that takes every delivery (204) and counts it.
type sink struct {
	ln  net.Listener
	srv *http.Server
}

func startSink(count *atomic.Int64) (*sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("webhook sink: %w", err)
	}
	s := &sink{ln: ln, srv: &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		count.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *sink) Addr() net.Addr { return s.ln.Addr() }
func (s *sink) Close() error   { return s.srv.Close() }

package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Bench holds one platform under test and what the set-up created on it
// through the admin and partner APIs (never by writing the store).
type Bench struct {
	P   *Platform
	Opt Options
	run string // unique per run, so ids never collide with an earlier run's

	app   App     // the channel app of the user scenarios
	users []int64 // registered users (snapshot and report reads)
	// capacity is each scenario's measured rate in this run, by row name
	// (the paced scenarios offer a share of their closed loop's).
	capacity map[string]float64
	// floor, when set, is where report-pull measures its pull floor.
	floor *pullFloor
	// readBase, when set, is where snapshot-cost runs pgbench -S.
	readBase *pgbenchAt
	// stats is the connection transaction counts are read over.
	stats statsConn
}

var seq atomic.Int64

// uniq is a process-wide counter: every write body carries one, so no two
// concurrent scheme M writes share a signature.
func uniq() int64 { return seq.Add(1) }

type registered struct {
	OpenUserID   int64 `json:"open_user_id"`
	FamilyGroups []struct {
		FamilyGroupID int64 `json:"family_group_id"`
		AppGroupID    int64 `json:"app_group_id"`
	} `json:"family_groups"`
}

// register registers one channel user with a family group (app_group_id 1).
func (b *Bench) register(ctx context.Context, app App, tag string) (int64, error) {
	body := fmt.Sprintf(`{"channel_user_id":"%s-%s-%d","user":{"name":"Bench User","phone":"138%08d","gender":"female","birth_date":"1990-01-02"},"family_groups":[{"app_group_id":1,"name":"home"}]}`,
		b.run, tag, uniq(), rand.IntN(100000000))
	var r registered
	if err := b.P.partnerM(ctx, app, http.MethodPost, "/open/v1/channel/users", []byte(body), http.StatusCreated, &r); err != nil {
		return 0, err
	}
	return r.OpenUserID, nil
}

// patch changes one user's nickname (always a change, so always an event).
func (b *Bench) patch(ctx context.Context, app App, user int64) error {
	body := fmt.Sprintf(`{"nickname":"n%d"}`, uniq())
	return b.P.partnerM(ctx, app, http.MethodPatch, "/open/v1/channel/users/"+strconv.FormatInt(user, 10), []byte(body), http.StatusOK, nil)
}

// setup creates the channel app and the users the read scenarios read.
func (b *Bench) setup(ctx context.Context) error {
	a, err := b.P.createApp(ctx, "bench-"+b.run)
	if err != nil {
		return fmt.Errorf("create app: %w", err)
	}
	b.app = a
	b.users = make([]int64, b.Opt.Users)
	return forEach(ctx, b.Opt.Clients, b.Opt.Users, func(ctx context.Context, i int) (err error) {
		b.users[i], err = b.register(ctx, a, "reader")
		return err
	})
}

// Register: every call registers a new channel user with one family group.
func (b *Bench) Register(ctx context.Context) (Measured, error) {
	return closedLoop(ctx, b.phase(b.Opt.Clients), b.registerOp), nil
}

func (b *Bench) registerOp(ctx context.Context, _, _ int) error {
	_, err := b.register(ctx, b.app, "reg")
	return err
}

// Patch: each worker PATCHes its own user, which already has history
// events (fresh users when history is 0).
func (b *Bench) Patch(ctx context.Context, history int) (Measured, error) {
	c := b.Opt.PatchClients
	own := make([]int64, c)
	err := forEach(ctx, c, c, func(ctx context.Context, i int) (err error) {
		own[i], err = b.register(ctx, b.app, "patch")
		return err
	})
	if err != nil {
		return Measured{}, err
	}
	// The history is written through the API too: users in parallel, each
	// user's PATCHes one after another (concurrent PATCHes of one user
	// would be refused as concurrent modifications).
	if err := forEach(ctx, c, c, func(ctx context.Context, u int) error {
		for range history {
			if err := b.patch(ctx, b.app, own[u]); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return Measured{}, fmt.Errorf("history: %w", err)
	}
	return closedLoop(ctx, b.phase(c), func(ctx context.Context, w, _ int) error {
		return b.patch(ctx, b.app, own[w])
	}), nil
}

// MemberUpsert: each worker upserts members of its own user's family group,
// rotating over 20 app_user_ids (creates first, updates after).
func (b *Bench) MemberUpsert(ctx context.Context) (Measured, error) {
	op, err := b.memberUpsertOp(ctx)
	if err != nil {
		return Measured{}, err
	}
	return closedLoop(ctx, b.phase(b.Opt.Clients), op), nil
}

// memberUpsertOp registers one user per client and returns the upsert of
// client w's i-th call.
func (b *Bench) memberUpsertOp(ctx context.Context) (Op, error) {
	c := b.Opt.Clients
	own := make([]int64, c)
	if err := forEach(ctx, c, c, func(ctx context.Context, i int) (err error) {
		own[i], err = b.register(ctx, b.app, "member")
		return err
	}); err != nil {
		return nil, err
	}
	return func(ctx context.Context, w, i int) error {
		body := fmt.Sprintf(`{"app_user_id":"m%d","app_group_id":1,"name":"Member","relationship":"SON","weight":%d}`, i%20, 100+uniq()%49000)
		path := "/open/v1/channel/users/" + strconv.FormatInt(own[w], 10) + "/family-members"
		err := b.P.partnerM(ctx, b.app, http.MethodPost, path, []byte(body), http.StatusOK, nil)
		var se *StatusError
		if errors.As(err, &se) && se.Status == http.StatusCreated {
			return nil // a create answers 201
		}
		return err
	}, nil
}

// pacedRate is the offered rate of scenario's paced row: -paced-rate, else
// -paced-share of the rate scenario's closed loop measured in this run.
func (b *Bench) pacedRate(scenario string) (float64, error) {
	if b.Opt.PacedRate > 0 {
		return b.Opt.PacedRate, nil
	}
	measured := b.capacity[scenario]
	if measured <= 0 {
		return 0, fmt.Errorf("no capacity to pace at: run %s before it, or give -paced-rate", scenario)
	}
	return measured * b.Opt.PacedShare, nil
}

// Paced offers scenario's calls (register or member-upsert) at a fixed
// rate, an open loop: each call's latency counts from when it was due, so
// the p99 is what a client sending at that rate sees.
func (b *Bench) Paced(ctx context.Context, scenario, store string, rate float64) (Measured, error) {
	op := b.registerOp
	if scenario == "member-upsert" {
		var err error
		if op, err = b.memberUpsertOp(ctx); err != nil {
			return Measured{}, err
		}
	}
	p := b.phase(b.Opt.Clients)
	p.Rate, p.FromDue = rate, true
	if b.Opt.TimelineDir != "" {
		p.Timeline = &Timeline{}
	}
	m := closedLoop(ctx, p, op)
	if p.Timeline != nil {
		if err := p.Timeline.WriteCSV(filepath.Join(b.Opt.TimelineDir, store+"-"+scenario+"-paced.csv")); err != nil {
			return m, err
		}
	}
	return m, nil
}

// Snapshot: GET a random user's full snapshot.
func (b *Bench) Snapshot(ctx context.Context) (Measured, error) {
	return closedLoop(ctx, b.phase(b.Opt.Clients), func(ctx context.Context, _, _ int) error {
		u := b.users[rand.IntN(len(b.users))]
		return b.P.partnerM(ctx, b.app, http.MethodGet, "/open/v1/channel/users/"+strconv.FormatInt(u, 10), nil, http.StatusOK, nil)
	}), nil
}

// Healthz is the embedded read baseline: the cheapest route over the same
// HTTP stack and connections.
func (b *Bench) Healthz(ctx context.Context) (Measured, error) {
	return closedLoop(ctx, b.phase(b.Opt.Clients), func(ctx context.Context, _, _ int) error {
		return b.P.plain(ctx, "/healthz", http.StatusOK)
	}), nil
}

// ReportPull: an uploader uploads one report per user; the pull reads a
// random one with scheme H and a fresh nonce each time.
func (b *Bench) ReportPull(ctx context.Context) (Measured, error) {
	var up struct {
		Token string `json:"token"`
	}
	if err := b.P.admin(ctx, http.MethodPost, "/admin/v1/uploaders", map[string]any{"name": "bench-" + b.run}, http.StatusCreated, &up); err != nil {
		return Measured{}, fmt.Errorf("create uploader: %w", err)
	}
	reports := make([]int64, len(b.users))
	if err := forEach(ctx, b.Opt.Clients, len(b.users), func(ctx context.Context, i int) error {
		var r struct {
			ID int64 `json:"id"`
		}
		body := map[string]any{"open_user_id": b.users[i], "report_type": "BLOOD_PRESSURE", "request_report_id": fmt.Sprintf("%s-%d", b.run, i),
			"raw_data": map[string]any{"data_source": "station", "data_type": "indicators", "indicators": []any{
				map[string]any{"code": "SBP", "value": 118, "unit": "mmHg"}, map[string]any{"code": "DBP", "value": 76, "unit": "mmHg"},
				map[string]any{"code": "HR", "value": 72, "unit": "bpm"}}}}
		err := b.P.bearer(ctx, up.Token, http.MethodPost, "/admin/v1/health-reports", body, http.StatusCreated, &r)
		reports[i] = r.ID
		return err
	}); err != nil {
		return Measured{}, fmt.Errorf("upload reports: %w", err)
	}
	return closedLoop(ctx, b.phase(b.Opt.Clients), func(ctx context.Context, _, _ int) error {
		id := reports[rand.IntN(len(reports))]
		return b.P.partnerH(ctx, b.app, http.MethodGet, "/open/v1/health-reports/"+strconv.FormatInt(id, 10), http.StatusOK, nil)
	}), nil
}

// verifySetup registers a station provider (approved, allowed one item) and
// issues cards cards by the operator, each with quantity uses of the item.
func (b *Bench) verifySetup(ctx context.Context, cards, quantity int) (App, int64, []string, error) {
	var item struct {
		ID int64 `json:"benefit_item_id"`
	}
	if err := b.P.admin(ctx, http.MethodPost, "/admin/v1/benefit-items", map[string]any{"name": "Check-up " + b.run}, http.StatusCreated, &item); err != nil {
		return App{}, 0, nil, fmt.Errorf("benefit item: %w", err)
	}
	station, err := b.P.createApp(ctx, "station-"+b.run)
	if err != nil {
		return App{}, 0, nil, err
	}
	var sp struct {
		ID int64 `json:"provider_id"`
	}
	if err := b.P.admin(ctx, http.MethodPost, "/admin/v1/service-providers", map[string]any{"app_id": station.ID, "name": "Station", "type": "HEALTH_STATION",
		"contact": "010-1", "points_code": "P-1"}, http.StatusCreated, &sp); err != nil {
		return App{}, 0, nil, fmt.Errorf("provider: %w", err)
	}
	if err := b.P.admin(ctx, http.MethodPost, fmt.Sprintf("/admin/v1/service-providers/%d/review", sp.ID), map[string]any{"decision": "approve"}, http.StatusOK, nil); err != nil {
		return App{}, 0, nil, fmt.Errorf("review: %w", err)
	}
	if err := b.P.admin(ctx, http.MethodPut, fmt.Sprintf("/admin/v1/service-providers/%d/benefit-items", sp.ID), map[string]any{"allowed_benefit_item_ids": []int64{item.ID}}, http.StatusOK, nil); err != nil {
		return App{}, 0, nil, fmt.Errorf("allow item: %w", err)
	}
	expires := time.Now().Add(30 * 24 * time.Hour).Format(time.RFC3339)
	numbers := make([]string, cards)
	batches := (cards + 99) / 100
	if err := forEach(ctx, 4, batches, func(ctx context.Context, bi int) error {
		n := min(100, cards-bi*100)
		list := make([]any, n)
		for i := range list {
			list[i] = map[string]any{"holder_name": "Han Meimei", "holder_phone": "13987654321", "expires_at": expires,
				"items": []any{map[string]any{"benefit_item_id": item.ID, "quantity": quantity}}}
		}
		var out struct {
			Cards []struct {
				CardNumber string `json:"card_number"`
			} `json:"cards"`
		}
		if err := b.P.admin(ctx, http.MethodPost, "/admin/v1/benefit-cards", map[string]any{"issuer_app_id": b.app.ID, "cards": list}, http.StatusCreated, &out); err != nil {
			return fmt.Errorf("issue cards: %w", err)
		}
		for i, c := range out.Cards {
			numbers[bi*100+i] = c.CardNumber
		}
		return nil
	}); err != nil {
		return App{}, 0, nil, err
	}
	return station, item.ID, numbers, nil
}

// hotCards is how many cards the hot-card scenario issues: one is in use
// at a time, and the next takes over when it runs out, since a card line
// holds at most 100,000 units and a fast node uses that many in ten-odd
// seconds.
const hotCards = 8

// Verify: verify-use of one unit, on one hot card (every worker on the same
// card's stream; cards == 1) or spread over many cards.
func (b *Bench) Verify(ctx context.Context, cards int) (Measured, error) {
	issue := cards
	if cards == 1 {
		issue = hotCards
	}
	station, item, numbers, err := b.verifySetup(ctx, issue, 100000)
	if err != nil {
		return Measured{}, err
	}
	var hot atomic.Int64 // the hot card in use
	return closedLoop(ctx, b.phase(b.Opt.Clients), func(ctx context.Context, _, _ int) error {
		for {
			i := int(hot.Load())
			card := i
			if cards > 1 {
				card = rand.IntN(len(numbers))
			} else if i >= len(numbers) {
				return fmt.Errorf("verify-use: all %d hot cards used up", len(numbers))
			}
			body := fmt.Sprintf(`{"card_number":%q,"benefit_item_id":%d,"points_code":"P-1","quantity":1,"remark":"bench %d"}`,
				numbers[card], item, uniq())
			err := b.P.partnerM(ctx, station, http.MethodPost, "/open/v1/benefit-cards/verify-use", []byte(body), http.StatusOK, nil)
			var se *StatusError
			if cards == 1 && errors.As(err, &se) && se.Status == http.StatusUnprocessableEntity && strings.Contains(se.Body, `"NO_REMAINING_QUOTA"`) {
				hot.CompareAndSwap(int64(i), int64(i+1)) // used up: on to the next card
				continue
			}
			return err
		}
	}), nil
}

func (b *Bench) phase(clients int) Phase {
	return Phase{Clients: clients, Warmup: b.Opt.Warmup, Window: b.Opt.Window, CPU: b.cpuProbe()}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// fanoutEndpoints are the endpoint counts webhook-fanout compares: none
// (the write alone), one, and an app's most (the default one included).
var fanoutEndpoints = []int{0, 1, 10}

// FanoutResult is one endpoint count's run of webhook-fanout.
type FanoutResult struct {
	Endpoints int
	Writes    Measured // the paced PATCHes; CPU is the window's
	Missing   int      // window writes some endpoint had not received after the drain
	Bad       int64    // deliveries with a bad signature
}

// WebhookFanout offers the same fixed rate of PATCHes to three apps in
// turn: one with no webhook endpoint, one with one and one with ten, each
// endpoint a loopback receiver with its own secret. At a fixed rate every
// window's CPU is the writes plus whatever their deliveries cost, so the
// difference to the endpoint-less app is what the deliveries of one event
// cost: one delivery's, and a ten-way fan-out's.
func (b *Bench) WebhookFanout(ctx context.Context, rate float64) ([]FanoutResult, error) {
	var out []FanoutResult
	for _, n := range fanoutEndpoints {
		res, err := b.fanoutRun(ctx, n, rate)
		if err != nil {
			return nil, fmt.Errorf("%d endpoints: %w", n, err)
		}
		out = append(out, res)
	}
	return out, nil
}

// fanoutRun is one endpoint count's run: set-up, a settle, the paced
// window, and a bounded wait until every endpoint received every write of
// the window.
func (b *Bench) fanoutRun(ctx context.Context, endpoints int, rate float64) (FanoutResult, error) {
	app, err := b.P.createApp(ctx, fmt.Sprintf("fanout%d-%s", endpoints, b.run))
	if err != nil {
		return FanoutResult{}, err
	}
	rcvs, err := b.fanoutEndpoints(ctx, app, endpoints)
	defer func() {
		for _, r := range rcvs {
			r.Close()
		}
	}()
	if err != nil {
		return FanoutResult{}, err
	}
	c := b.Opt.PatchClients
	own := make([]int64, c)
	if err := forEach(ctx, c, c, func(ctx context.Context, i int) (err error) {
		own[i], err = b.register(ctx, app, "fanout")
		return err
	}); err != nil {
		return FanoutResult{}, err
	}
	_ = b.settle(ctx, b.Opt.Drain)
	before := make([][]int, len(rcvs))
	for e, r := range rcvs {
		before[e] = r.perUser(own)
	}
	phase := b.phase(c)
	phase.Rate = rate
	acked := make([]int, c) // per worker, PATCHes acknowledged
	m := closedLoop(ctx, phase, func(ctx context.Context, w, _ int) error {
		if err := b.patch(ctx, app, own[w]); err != nil {
			return err
		}
		acked[w]++
		return nil
	})
	res := FanoutResult{Endpoints: endpoints, Writes: m}
	// Each endpoint must receive every acknowledged PATCH, in order per user.
	deadline := time.Now().Add(b.Opt.Drain)
	for ctx.Err() == nil {
		missing := 0
		for e, r := range rcvs {
			got := r.perUser(own)
			for w := range own {
				missing += max(0, before[e][w]+acked[w]-got[w])
			}
		}
		res.Missing = missing
		if missing == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, r := range rcvs {
		res.Bad += r.bad.Load()
	}
	return res, nil
}

// fanoutEndpoints points app's default endpoint at a receiver and adds
// endpoints-1 more, each with its own receiver and secret, subscribed to
// the scenario's one event type.
func (b *Bench) fanoutEndpoints(ctx context.Context, app App, endpoints int) ([]*Receiver, error) {
	var rcvs []*Receiver
	if endpoints == 0 {
		return nil, nil
	}
	r, err := startReceiver(app.WebhookSecret)
	if err != nil {
		return rcvs, err
	}
	rcvs = append(rcvs, r)
	if err := b.P.admin(ctx, http.MethodPatch, "/admin/v1/apps/"+strconv.FormatInt(app.ID, 10), map[string]any{"webhook_url": r.URL}, http.StatusOK, nil); err != nil {
		return rcvs, fmt.Errorf("set webhook URL (is PLATFORM_WEBHOOK_ALLOW_LOOPBACK on?): %w", err)
	}
	for i := 1; i < endpoints; i++ {
		// The receiver's secret is known only from the answer: start it
		// with none, then set it before any delivery can arrive (the
		// endpoint has no events before the scenario's writes).
		r, err := startReceiver("")
		if err != nil {
			return rcvs, err
		}
		rcvs = append(rcvs, r)
		body, _ := json.Marshal(map[string]any{"url": r.URL, "events": []string{"user.profile.updated"}})
		var ep struct {
			Secret string `json:"webhook_secret"`
		}
		if err := b.P.partnerM(ctx, app, http.MethodPost, "/open/v1/webhooks/endpoints", body, http.StatusCreated, &ep); err != nil {
			return rcvs, fmt.Errorf("add endpoint %d: %w", i, err)
		}
		r.mu.Lock()
		r.secret = ep.Secret
		r.mu.Unlock()
	}
	return rcvs, nil
}

// perUser is, for each user, how many distinct profile updates arrived.
func (r *Receiver) perUser(users []int64) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := make([]int, len(users))
	for i, u := range users {
		n[i] = len(r.byUser[u])
	}
	return n
}

// fanoutRows are webhook-fanout's lines: each endpoint count's paced
// writes with their CPU, and, on the ten-endpoint row, the deliveries'
// cost against one delivery's.
func fanoutRows(res []FanoutResult, store string, o Options, rate float64) []Row {
	var rows []Row
	var none, one float64 // platform CPU per write with 0 and 1 endpoints
	for _, r := range res {
		row := rowOf(fmt.Sprintf("webhook fan-out: %d endpoint%s, %g PATCH/s offered", r.Endpoints, plural(r.Endpoints), rate), store, o.PatchClients, r.Writes, "", nil)
		row.Errors += int64(r.Missing) + r.Bad
		extra := row.PlatformCPUus - none
		switch r.Endpoints {
		case 0:
			none = row.PlatformCPUus
			row.Note = "the writes alone: no endpoint, no delivery"
		case 1:
			one = extra
			row.Note = fmt.Sprintf("one delivery costs %.0f µs of platform CPU over the write alone", extra)
		default:
			row.Note = fmt.Sprintf("%d deliveries of one event cost %.0f µs of platform CPU over the write alone", r.Endpoints, extra)
			if one > 0 {
				row.Note += fmt.Sprintf(": %.2f× one delivery's (goal ≤ 3×)", extra/one)
			}
		}
		if row.PlatformCPUus == 0 {
			row.Note = "platform CPU not measured (no -platform-pid)"
		}
		row.Note += fmt.Sprintf("; errors = %d deliveries missing after %s + %d bad signatures", r.Missing, o.Drain, r.Bad)
		rows = append(rows, row)
	}
	return rows
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

package main

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/healthtech/partner-open-platform/webhooks"
)

// receipt is one delivery as the receiver saw it.
type receipt struct {
	at       time.Time // when the receiver read it
	occurred time.Time // the event's own occurred_at (whole seconds)
}

// Receiver is a loopback webhook endpoint: it checks each delivery's
// signature the way a partner must, drops repeats of a delivery_id, and
// keeps, per user, the receipt times of user.profile.updated in arrival
// order (deliveries of one subject arrive in order).
type Receiver struct {
	secret string
	// secrets, when set, holds one secret per URL path: a receiver shared
	// by many apps, each pointed at its own path.
	secrets map[string]string
	mu      sync.Mutex
	seen    map[string]bool
	byUser  map[int64][]receipt
	all     []time.Time // every correctly signed delivery, repeats included, in arrival order
	bad     atomic.Int64
	srv     *http.Server
	URL     string
}

// startReceiver listens on a free loopback port.
func startReceiver(secret string) (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("webhook receiver: %w", err)
	}
	r := &Receiver{secret: secret, seen: map[string]bool{}, byUser: map[int64][]receipt{}, URL: "http://" + ln.Addr().String() + "/hook"}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// ServeHTTP records one delivery: 401 on a bad signature (counted), 200 else.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	body, err := io.ReadAll(req.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	secret := r.secret
	if r.secrets != nil {
		secret = r.secrets[req.URL.Path]
	}
	r.mu.Unlock()
	want := webhooks.Sign(secret, req.Header.Get("X-Webhook-Timestamp"), body)
	if !hmac.Equal([]byte(want), []byte(req.Header.Get("X-Webhook-Signature"))) {
		r.bad.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var d struct {
		Event      string `json:"event"`
		DeliveryID string `json:"delivery_id"`
		OpenUserID int64  `json:"open_user_id"`
		OccurredAt string `json:"occurred_at"`
	}
	if err := json.Unmarshal(body, &d); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	occurred, _ := time.Parse(time.RFC3339, d.OccurredAt)
	r.mu.Lock()
	r.all = append(r.all, at)
	if !r.seen[d.DeliveryID] && d.Event == "user.profile.updated" {
		r.seen[d.DeliveryID] = true
		r.byUser[d.OpenUserID] = append(r.byUser[d.OpenUserID], receipt{at: at, occurred: occurred})
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// count is how many distinct deliveries have arrived for the users.
func (r *Receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.byUser {
		n += len(l)
	}
	return n
}

// total is how many correctly signed deliveries have arrived, repeats
// and every event type included.
func (r *Receiver) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.all)
}

// Close stops the receiver.
func (r *Receiver) Close() { _ = r.srv.Close() }

// WebhookResult is the webhook scenario's outcome.
type WebhookResult struct {
	Writes       Measured   // the PATCHes, measured like any closed loop
	Delivered    int        // deliveries received during the measured window
	AckToReceipt *Latencies // write acknowledged → delivery received
	EventToRecpt *Latencies // event occurred_at → delivery received (1 s resolution)
	Missing      int        // window writes with no delivery by the drain deadline
	BadSignature int64
}

// Webhooks: an app whose webhook URL is the loopback receiver; each worker
// PATCHes its own user (one event, one delivery each). The k-th delivery of
// a user answers its k-th acknowledged PATCH.
func (b *Bench) Webhooks(ctx context.Context) (WebhookResult, error) {
	app, err := b.P.createApp(ctx, "hooks-"+b.run)
	if err != nil {
		return WebhookResult{}, err
	}
	rcv, err := startReceiver(app.WebhookSecret)
	if err != nil {
		return WebhookResult{}, err
	}
	defer rcv.Close()
	if err := b.P.admin(ctx, http.MethodPatch, "/admin/v1/apps/"+strconv.FormatInt(app.ID, 10), map[string]any{"webhook_url": rcv.URL}, http.StatusOK, nil); err != nil {
		return WebhookResult{}, fmt.Errorf("set webhook URL (is PLATFORM_WEBHOOK_ALLOW_LOOPBACK on?): %w", err)
	}
	c := b.Opt.PatchClients
	own := make([]int64, c)
	if err := forEach(ctx, c, c, func(ctx context.Context, i int) (err error) {
		own[i], err = b.register(ctx, app, "hook")
		return err
	}); err != nil {
		return WebhookResult{}, err
	}
	acks := make([][]time.Time, c) // per worker, every acknowledged PATCH
	start := time.Now()
	phase := b.phase(c)
	phase.Rate = b.Opt.WebhookRate
	m := closedLoop(ctx, phase, func(ctx context.Context, w, _ int) error {
		if err := b.patch(ctx, app, own[w]); err != nil {
			return err
		}
		acks[w] = append(acks[w], time.Now())
		return nil
	})
	from, to := start.Add(b.Opt.Warmup), start.Add(b.Opt.Warmup+b.Opt.Window)
	total := 0
	for _, a := range acks {
		total += len(a)
	}
	// Drain: wait (bounded) until every acknowledged write was delivered.
	deadline := time.Now().Add(b.Opt.Drain)
	for rcv.count() < total && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	res := WebhookResult{Writes: m, AckToReceipt: &Latencies{}, EventToRecpt: &Latencies{}, BadSignature: rcv.bad.Load()}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for w, user := range own {
		got := rcv.byUser[user]
		for _, l := range got {
			if !l.at.Before(from) && l.at.Before(to) {
				res.Delivered++
			}
		}
		var ack, ev []time.Duration
		for k, at := range acks[w] {
			if at.Before(from) || !at.Before(to) {
				continue
			}
			if k >= len(got) {
				res.Missing++
				continue
			}
			ack = append(ack, got[k].at.Sub(at))
			ev = append(ev, got[k].at.Sub(got[k].occurred))
		}
		res.AckToReceipt.Add(ack)
		res.EventToRecpt.Add(ev)
	}
	return res, nil
}

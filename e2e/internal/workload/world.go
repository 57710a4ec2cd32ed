package workload

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/internal/proc"
)

// World is the test's view of the platform: the apps and fixtures it set up
// and a ledger of what the platform acknowledged.
type World struct {
	t   *testing.T
	c   *proc.Cluster
	rcv *proc.HookReceiver
	run string

	partner   proc.Partner // users, orders, reports; issues the cards
	clinic    proc.Creds   // verifies cards through its providers
	providers []int64
	item      int64
	uploader  string
	cards     []*cardState
	appAt     time.Duration // how long the apps took to work on every node

	pullMu   sync.Mutex
	lastPull time.Time

	mu       sync.Mutex
	counts   map[string]map[string]int
	users    []*ackUser
	memberW  map[int64]int // acked writes per member id
	orders   map[string]*ackOrder
	reports  map[int64]int64 // acked report id → open user id
	failures map[string][]string
	failKeys []string
	lastAck  time.Time
	maxGap   time.Duration
	gapEnd   time.Time
	maxLat   time.Duration
	maxLatOf string
	answered []answered // every request some node answered, for the failover windows
}

// answered is when a request ran, which node answered it, and whether it
// was refused (5xx, broken connection) or slow.
type answered struct {
	start, end time.Time
	node       int
	refused    bool // 5xx or a broken connection
	latency    time.Duration
}

type ackUser struct {
	mu         sync.Mutex // held by the one operation writing its members
	channelID  string
	openUserID int64
	members    map[string]int64 // app_user_id → member_id (acked)
	next       int
}

type ackOrder struct {
	third  string
	ids    map[int64]string // order id → order code, from every ack
	acks   int
	maybes int
}

type cardState struct {
	number string
	quota  int64

	mu    sync.Mutex
	acked map[int64]int64 // fulfillment record id → remaining it reported
	maybe int
}

func Setup(t *testing.T, c *proc.Cluster, rcv *proc.HookReceiver) *World {
	w := &World{t: t, c: c, rcv: rcv, run: proc.RandomHex(t, 3), counts: map[string]map[string]int{}, memberW: map[int64]int{},
		orders: map[string]*ackOrder{}, reports: map[int64]int64{}, failures: map[string][]string{}}
	w.partner = c.CreatePartner("chaos partner")
	rcv.SetSecret(w.partner.WebhookSecret)
	// No webhook_events: every event.
	c.Admin("PATCH", fmt.Sprintf("/admin/v1/apps/%d", w.partner.AppID), map[string]any{"webhook_url": rcv.URL() + "/hooks"}, http.StatusOK, nil)
	c.Admin("POST", "/admin/v1/goods", map[string]any{"goods_code": "CHAOS-1", "goods_name": "Chaos monitor"}, http.StatusCreated, nil)
	var it struct {
		ID int64 `json:"benefit_item_id"`
	}
	c.Admin("POST", "/admin/v1/benefit-items", map[string]any{"name": "Chaos check-up"}, http.StatusCreated, &it)
	w.item = it.ID
	var prov struct {
		ID int64 `json:"provider_id"`
	}
	c.Admin("POST", "/admin/v1/service-providers", map[string]any{"app_id": w.partner.AppID, "name": "Chaos insurer", "type": "CHANNEL_PARTNER", "contact": "x"}, http.StatusCreated, &prov)
	c.Admin("POST", fmt.Sprintf("/admin/v1/service-providers/%d/review", prov.ID), map[string]any{"decision": "approve"}, http.StatusOK, nil)
	clinic := c.CreatePartner("chaos clinics")
	w.clinic = clinic.Creds
	// Several providers: the DUPLICATE_FULFILLMENT cooldown is per card item
	// and provider, so verifications of one card can race.
	for i := range 4 {
		c.PartnerCall(w.clinic, "POST", "/open/v1/service-providers", map[string]any{"name": fmt.Sprintf("Clinic %d", i), "type": "SERVICE_PROVIDER", "contact": "x"}, http.StatusCreated, &prov)
		c.Admin("POST", fmt.Sprintf("/admin/v1/service-providers/%d/review", prov.ID), map[string]any{"decision": "approve"}, http.StatusOK, nil)
		c.Admin("PUT", fmt.Sprintf("/admin/v1/service-providers/%d/benefit-items", prov.ID), map[string]any{"allowed_benefit_item_ids": []int64{w.item}}, http.StatusOK, nil)
		w.providers = append(w.providers, prov.ID)
	}
	expires := time.Now().Add(48 * time.Hour).Format(time.RFC3339)
	for b := range 4 {
		var cards []any
		for range 25 {
			cards = append(cards, map[string]any{"holder_name": "韩梅梅", "holder_phone": "13987654321", "expires_at": expires,
				"items": []any{map[string]any{"benefit_item_id": w.item, "quantity": 3}}})
		}
		var out struct {
			Cards []struct {
				CardNumber string `json:"card_number"`
			} `json:"cards"`
		}
		c.PartnerCall(w.partner.Creds, "POST", "/open/v1/benefit-cards/batch-issue", map[string]any{"batch_id": fmt.Sprintf("chaos-%s-%d", w.run, b), "cards": cards}, http.StatusCreated, &out)
		for _, cd := range out.Cards {
			w.cards = append(w.cards, &cardState{number: cd.CardNumber, quota: 3, acked: map[int64]int64{}})
		}
	}
	var up struct {
		Token string `json:"token"`
	}
	c.Admin("POST", "/admin/v1/uploaders", map[string]any{"name": "chaos station"}, http.StatusCreated, &up)
	w.uploader = up.Token
	w.appAt = c.AwaitEverywhere(w.partner.Creds, "/open/v1/benefit-cards/detail?card_number="+w.cards[len(w.cards)-1].number, 30*time.Second)
	w.appAt += c.AwaitEverywhere(w.clinic, "/open/v1/benefit-cards/fulfillments", 30*time.Second)
	return w
}

// Partner is the app the load writes as, for a test's own calls beside it.
func (w *World) Partner() proc.Partner { return w.partner }

// Run is the run's unique tag, for ids a test adds beside the load's.
func (w *World) Run() string { return w.run }

// Fail records a finding under a category; report turns them into errors.
func (w *World) Fail(category, detail string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.failures[category]; !ok {
		w.failKeys = append(w.failKeys, category)
	}
	w.failures[category] = append(w.failures[category], detail)
}

func (w *World) Report() {
	for _, k := range w.failKeys {
		list := w.failures[k]
		shown := list
		if len(shown) > 15 {
			shown = shown[:15]
		}
		more := ""
		if len(list) > len(shown) {
			more = fmt.Sprintf("\n  ... and %d more", len(list)-len(shown))
		}
		w.t.Errorf("%s: %d case(s):\n  %s%s", k, len(list), strings.Join(shown, "\n  "), more)
	}
}

func (w *World) Count(kind, outcome string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts[kind][outcome]
}

// record classifies a reply: acked (2xx), maybe (unknown outcome: broken
// connection or 5xx), unavailable (no node took the connection), or
// refused with its status and code.
func (w *World) record(r *proc.Reply) string {
	var out string
	switch {
	case r.Down:
		out = "unavailable"
	case r.Err != nil:
		out = "maybe (connection broke)"
	case r.Status >= 500:
		out = fmt.Sprintf("maybe (%d %s)", r.Status, r.Code())
	case r.Status >= 200 && r.Status < 300:
		out = "acked"
	default:
		out = fmt.Sprintf("refused %d %s", r.Status, r.Code())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.counts[r.Kind] == nil {
		w.counts[r.Kind] = map[string]int{}
	}
	w.counts[r.Kind][out]++
	if !r.Down {
		end := time.Now()
		w.answered = append(w.answered, answered{start: end.Add(-r.Latency), end: end, node: r.Node,
			refused: r.Err != nil || r.Status >= 500, latency: r.Latency})
	}
	if r.Latency > w.maxLat {
		w.maxLat, w.maxLatOf = r.Latency, fmt.Sprintf("%s via node %d (%s)", r.Kind, r.Node, out)
	}
	if out == "acked" && !strings.HasPrefix(r.Kind, "read") {
		now := time.Now()
		if !w.lastAck.IsZero() && now.Sub(w.lastAck) > w.maxGap {
			w.maxGap, w.gapEnd = now.Sub(w.lastAck), now
		}
		w.lastAck = now
	}
	return out
}

// readAfter reads a just-acknowledged write through a node other than the
// writer; a read that answers without the write is a miss. A node that is
// down or answers 5xx tells nothing: the read is counted, not judged.
func (w *World) readAfter(kind, what string, writer int, acked time.Time, build func(base string) (*http.Request, error), check func(r *proc.Reply) error) {
	r := w.c.Client.Send("read after "+kind, w.c.Client.Other(writer), writer, build)
	if out := w.record(r); out != "acked" && (r.Down || r.Unknown()) {
		return
	}
	if err := check(r); err != nil {
		w.Fail("read after write missed the write ("+kind+")", fmt.Sprintf("%s %s acknowledged by node %d, read %v later through node %d: %v",
			kind, what, writer, time.Since(acked).Round(time.Millisecond), r.Node, err))
	}
}

// Load runs operations at a steady rate until ctx ends, at most 24 at once
// (a tick with none free is counted and skipped, so the rate is bounded).
func (w *World) Load(ctx context.Context, rate int) {
	sem := make(chan struct{}, 24)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		select {
		case sem <- struct{}{}:
		default:
			w.mu.Lock()
			if w.counts["client"] == nil {
				w.counts["client"] = map[string]int{}
			}
			w.counts["client"]["tick skipped: 24 operations in flight"]++
			w.mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			w.operate(n)
		}()
	}
}

func (w *World) operate(n int) {
	w.mu.Lock()
	haveUsers := len(w.users) > 0
	w.mu.Unlock()
	switch k := n % 20; {
	case k < 6 || !haveUsers:
		w.register(n)
	case k < 11:
		w.member(n)
	case k < 15:
		w.order(n)
	case k < 18:
		w.verify(n)
	default:
		w.healthReport(n)
	}
}

// SnapshotCounts copies the outcome counts so far.
func (w *World) SnapshotCounts() map[string]map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]map[string]int, len(w.counts))
	for kind, outs := range w.counts {
		out[kind] = make(map[string]int, len(outs))
		for o, n := range outs {
			out[kind][o] = n
		}
	}
	return out
}

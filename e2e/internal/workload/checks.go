package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/internal/proc"
	"github.com/jackc/pgx/v5"
)

// Settle waits until the cluster is quiet: projections caught up on every
// node, no delivery pending or retrying, every webhook the acknowledged
// writes imply received, and no webhook request for 3 s.
func (w *World) Settle(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for {
		why := ""
		if err := w.c.WaitProjections(time.Time{}, false, time.Millisecond); err != nil {
			why = err.Error()
		} else if dels, err := w.c.AdminDeliveries(0, w.partner.AppID); err != nil {
			why = err.Error()
		} else if open := openDeliveries(dels); open > 0 {
			why = fmt.Sprintf("%d deliveries pending or retrying", open)
		} else if missing := w.missingWebhooks(); len(missing) > 0 {
			why = fmt.Sprintf("%d expected webhooks not received (e.g. %s)", len(missing), missing[0])
		} else if !w.rcv.IdleFor(3 * time.Second) {
			why = "webhooks still arriving"
		}
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			w.t.Logf("the cluster did not settle within %v: %s (checking anyway)", timeout, why)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func openDeliveries(dels []map[string]any) int {
	n := 0
	for _, d := range dels {
		if s := d["status"]; s == "pending" || s == "retrying" {
			n++
		}
	}
	return n
}

// missingWebhooks lists the acknowledged writes whose webhook never arrived
// answered 2xx: each member write (created or updated) and each report.
func (w *World) missingWebhooks() []string {
	attempts, _, _, _ := w.rcv.Snapshot()
	perMember := map[int64]int{}
	reports := map[int64]bool{}
	for _, as := range attempts {
		okAttempt := false
		for _, a := range as {
			okAttempt = okAttempt || a.Status/100 == 2
		}
		if !okAttempt {
			continue
		}
		var b struct {
			Event        string `json:"event"`
			OpenReportID int64  `json:"open_report_id"`
			Data         struct {
				MemberID int64 `json:"member_id"`
			} `json:"data"`
		}
		if json.Unmarshal(as[0].Body, &b) != nil {
			continue
		}
		switch b.Event {
		case "user.family_member.created", "user.family_member.updated":
			perMember[b.Data.MemberID]++
		case "health.report.created":
			reports[b.OpenReportID] = true
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for id, writes := range w.memberW {
		if perMember[id] < writes {
			out = append(out, fmt.Sprintf("member %d: %d acknowledged writes, %d user.family_member.* webhooks delivered", id, writes, perMember[id]))
		}
	}
	for id := range w.reports {
		if !reports[id] {
			out = append(out, fmt.Sprintf("report %d: no health.report.created webhook delivered", id))
		}
	}
	sort.Strings(out)
	return out
}

// CheckAcknowledgedWrites reads every acknowledged register, member and
// order back (round-robin over the nodes).
func (w *World) CheckAcknowledgedWrites() {
	cl := w.c.Client
	for _, u := range w.users {
		r := cl.Send("final read", cl.Next(), -1, proc.SignedM(w.partner.Creds, "GET", "/open/v1/channel/users/0?channel_user_id="+u.channelID, nil))
		var s snapshotData
		if r.Status != http.StatusOK || r.Data(&s) != nil {
			w.Fail("acknowledged write missing", fmt.Sprintf("register %s (open_user_id %d): %s", u.channelID, u.openUserID, r))
			continue
		}
		if s.User.OpenUserID != u.openUserID {
			w.Fail("acknowledged write missing", fmt.Sprintf("register %s acked open_user_id %d, reads %d", u.channelID, u.openUserID, s.User.OpenUserID))
		}
		have := map[int64]bool{}
		for _, m := range s.FamilyMembers {
			have[m.MemberID] = true
		}
		for app, id := range u.members {
			if !have[id] {
				w.Fail("acknowledged write missing", fmt.Sprintf("member %s (member_id %d) of user %d absent: %s", app, id, u.openUserID, r.Env.Data))
			}
		}
	}
	for third, o := range w.orders {
		for id, code := range o.ids {
			r := cl.Send("final read", cl.Next(), -1, proc.SignedM(w.partner.Creds, "GET", "/open/v1/order/detail?order_code="+code, nil))
			if r.Status != http.StatusOK {
				w.Fail("acknowledged write missing", fmt.Sprintf("order %s (id %d, code %s): %s", third, id, code, r))
			}
		}
	}
}

// CheckCards compares every card's remaining quantity with its fulfillment
// records (attributed through their remark) and the acknowledged verify-uses.
func (w *World) CheckCards() {
	records := map[string][]int64{}
	after := int64(0)
	for range 1000 {
		r := w.c.Client.Send("final read", 0, -1, proc.SignedM(w.clinic, "GET", fmt.Sprintf("/open/v1/benefit-cards/fulfillments?role=provider&limit=1000&after=%d", after), nil))
		var page struct {
			Fulfillments []struct {
				ID     int64   `json:"fulfillment_record_id"`
				Remark *string `json:"remark"`
				Qty    int64   `json:"current_usage_quantity"`
			} `json:"fulfillments"`
		}
		if r.Status != http.StatusOK || r.Data(&page) != nil {
			w.Fail("final read failed", fmt.Sprintf("fulfillments after %d: %s", after, r))
			return
		}
		if len(page.Fulfillments) == 0 {
			break
		}
		for _, f := range page.Fulfillments {
			if f.Remark != nil {
				if _, rest, ok := strings.Cut(*f.Remark, "card="); ok {
					number, _, _ := strings.Cut(rest, " ")
					records[number] = append(records[number], f.ID)
				}
			}
			after = f.ID
		}
	}
	for _, card := range w.cards {
		r := w.c.Client.Send("final read", w.c.Client.Next(), -1, proc.Bearer(w.c.AdminToken, "GET", "/admin/v1/benefit-cards/"+card.number, nil))
		var cd struct {
			Items []struct {
				Total     int64 `json:"total_quantity"`
				Remaining int64 `json:"remaining_quantity"`
			} `json:"items"`
		}
		if r.Status != http.StatusOK || r.Data(&cd) != nil || len(cd.Items) != 1 {
			w.Fail("final read failed", fmt.Sprintf("card %s: %s", card.number, r))
			continue
		}
		used := cd.Items[0].Total - cd.Items[0].Remaining
		listed := map[int64]bool{}
		for _, id := range records[card.number] {
			listed[id] = true
		}
		remainders := map[int64]int64{}
		for id, rem := range card.acked {
			if !listed[id] {
				w.Fail("acknowledged write missing", fmt.Sprintf("verify-use of card %s: acked fulfillment record %d not listed", card.number, id))
			}
			if other, dup := remainders[rem]; dup {
				w.Fail("card over-consumed", fmt.Sprintf("card %s: records %d and %d both answered remaining_quantity %d", card.number, other, id, rem))
			}
			remainders[rem] = id
		}
		switch n := int64(len(records[card.number])); {
		case cd.Items[0].Remaining < 0 || used > card.quota:
			w.Fail("card over-consumed", fmt.Sprintf("card %s: quota %d, remaining %d, %d records", card.number, card.quota, cd.Items[0].Remaining, n))
		case used != n:
			w.Fail("card over-consumed", fmt.Sprintf("card %s: %d uses by its remaining quantity, %d fulfillment records", card.number, used, n))
		case n < int64(len(card.acked)) || n > int64(len(card.acked)+card.maybe):
			w.Fail("card over-consumed", fmt.Sprintf("card %s: %d records, %d acknowledged verify-uses and %d of unknown outcome", card.number, n, len(card.acked), card.maybe))
		}
	}
}

// CheckOrders lists the app's orders as an operator: one order per
// third_order_id, and the one every acknowledgement named.
func (w *World) CheckOrders() {
	byThird := map[string][]int64{}
	after := int64(0)
	for range 1000 {
		r := w.c.Client.Send("final read", 0, -1, proc.Bearer(w.c.AdminToken, "GET", fmt.Sprintf("/admin/v1/orders?app_id=%d&limit=1000&after=%d", w.partner.AppID, after), nil))
		var page struct {
			Orders []struct {
				ID    int64  `json:"id"`
				Third string `json:"third_order_id"`
			} `json:"orders"`
		}
		if r.Status != http.StatusOK || r.Data(&page) != nil {
			w.Fail("final read failed", fmt.Sprintf("orders after %d: %s", after, r))
			return
		}
		if len(page.Orders) == 0 {
			break
		}
		for _, o := range page.Orders {
			byThird[o.Third] = append(byThird[o.Third], o.ID)
			after = o.ID
		}
	}
	for third, ids := range byThird {
		if len(ids) > 1 {
			w.Fail("third_order_id is more than one order", fmt.Sprintf("%s: orders %v", third, ids))
		}
	}
	for third, o := range w.orders {
		for id := range o.ids {
			if len(byThird[third]) != 1 || byThird[third][0] != id {
				w.Fail("third_order_id is more than one order", fmt.Sprintf("%s acked as order %d, listed as %v", third, id, byThird[third]))
			}
		}
	}
}

// CheckWebhooks compares the platform's delivery log with what the
// receiver saw: every delivery delivered and received, each attempt with
// the same id and bytes, verified, and no two attempts of one delivery at
// once; and every acknowledged write's webhook there.
func (w *World) CheckWebhooks() {
	dels, err := w.c.AdminDeliveries(0, w.partner.AppID)
	if err != nil {
		w.Fail("final read failed", err.Error())
		return
	}
	attempts, _, _, _ := w.rcv.Snapshot()
	listed := map[string]bool{}
	for _, d := range dels {
		id, _ := d["delivery_id"].(string)
		listed[id] = true
		okAttempt := false
		for _, a := range attempts[id] {
			okAttempt = okAttempt || a.Status/100 == 2
		}
		if d["status"] != "delivered" || !okAttempt {
			w.Fail("webhook delivery did not reach the receiver", fmt.Sprintf("%s (%v) status %v after %v attempts (last error %v), %d requests received",
				id, d["event"], d["status"], d["attempts"], d["last_error"], len(attempts[id])))
		}
	}
	for id, as := range attempts {
		if !listed[id] {
			w.Fail("webhook delivery did not reach the receiver", fmt.Sprintf("received %s (%s), which the delivery log does not list", id, as[0].Event))
		}
		for i, a := range as {
			if !a.Verified || a.BodyID != id {
				w.Fail("webhook attempt malformed", fmt.Sprintf("%s attempt %d: signature verified %v, body delivery_id %q", id, i+1, a.Verified, a.BodyID))
			}
			if string(a.Body) != string(as[0].Body) {
				w.Fail("webhook body changed between attempts", fmt.Sprintf("%s attempt %d:\n    %s\n    first: %s", id, i+1, a.Body, as[0].Body))
			}
			if i > 0 && a.Start.Before(as[i-1].End) {
				w.Fail("two attempts of one delivery overlapped", fmt.Sprintf("%s (%s): attempt %d %s–%s, attempt %d began %s",
					id, a.Event, i, as[i-1].Start.Format("15:04:05.000"), as[i-1].End.Format("15:04:05.000"), i+1, a.Start.Format("15:04:05.000")))
			}
		}
	}
	missing := w.missingWebhooks()
	for _, m := range missing {
		w.Fail("acknowledged write's webhook never delivered", m)
	}
	if len(missing) > 0 {
		w.diagnoseUncreated()
	}
}

// diagnoseUncreated logs, for a failed run, the partner-visible member and
// report events of the log that have no delivery record, with the relay's
// checkpoint and when each event was appended against the kill times the
// report prints: whether the events reached creation at all tells a relay
// or consumer-group loss from a sender that never sent.
func (w *World) diagnoseUncreated() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, w.c.DB)
	if err != nil {
		w.t.Logf("diagnosis: connect: %v", err)
		return
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `
SELECT e.position, e.stream, e.id, e.type, e.created
FROM es_events e
WHERE e.type IN ('user.family_member.created', 'user.family_member.updated', 'health.report.created')
  AND NOT EXISTS (
    SELECT 1 FROM es_events d
    WHERE d.type = 'webhook.delivery.created'
      AND convert_from(d.data, 'UTF8')::jsonb->>'source_event_id' = e.id)
ORDER BY e.position`)
	if err != nil {
		w.t.Logf("diagnosis: query: %v", err)
		return
	}
	var lines []string
	for rows.Next() {
		var pos int64
		var stream, id, typ string
		var created time.Time
		if err := rows.Scan(&pos, &stream, &id, &typ, &created); err != nil {
			w.t.Logf("diagnosis: scan: %v", err)
			return
		}
		lines = append(lines, fmt.Sprintf("position %d %s %s (%s) appended %s", pos, stream, typ, id, created.Local().Format("15:04:05.000")))
	}
	if err := rows.Err(); err != nil {
		w.t.Logf("diagnosis: rows: %v", err)
	}
	var head int64
	_ = conn.QueryRow(ctx, `SELECT coalesce(max(position), 0) FROM es_events`).Scan(&head)
	var cps []string
	if cr, err := conn.Query(ctx, `SELECT name, commit_pos FROM relay_checkpoints ORDER BY name`); err == nil {
		for cr.Next() {
			var name string
			var pos int64
			if cr.Scan(&name, &pos) == nil {
				cps = append(cps, fmt.Sprintf("%s=%d", name, pos))
			}
		}
		cr.Close()
	}
	shown := lines
	if len(shown) > 60 {
		shown = shown[:60]
	}
	w.t.Logf("diagnosis: %d member/report events of the log have no delivery record (log head %d, relay checkpoints %s):\n  %s",
		len(lines), head, strings.Join(cps, " "), strings.Join(shown, "\n  "))
	for _, n := range w.c.Nodes {
		var keep []string
		for _, l := range strings.Split(n.LogTail(1<<20), "\n") {
			if strings.Contains(l, "webhook deliveries") || strings.Contains(l, "kafka") || strings.Contains(l, "relay") {
				keep = append(keep, l)
			}
		}
		if len(keep) > 40 {
			keep = keep[len(keep)-40:]
		}
		w.t.Logf("diagnosis: node %d log lines about creation, Kafka and the relay (last %d):\n%s", n.Idx, len(keep), strings.Join(keep, "\n"))
	}
}

// readModelSnapshot reads, through one node, every user snapshot, order,
// card, fulfillment and delivery the run made, as canonical JSON by key.
func (w *World) readModelSnapshot(node int) (map[string]string, error) {
	out := map[string]string{}
	canon := func(raw json.RawMessage) string {
		var v any
		_ = json.Unmarshal(raw, &v)
		return string(proc.MustJSON(v))
	}
	get := func(build func(string) (*http.Request, error)) (*proc.Reply, error) {
		r := w.c.Client.Send("snapshot", node, -1, build)
		if r.Status != http.StatusOK || r.Node != node {
			return nil, fmt.Errorf("%s", r)
		}
		return r, nil
	}
	for _, u := range w.users {
		r, err := get(proc.SignedM(w.partner.Creds, "GET", fmt.Sprintf("/open/v1/channel/users/%d", u.openUserID), nil))
		if err != nil {
			return nil, err
		}
		out["user "+u.channelID] = canon(r.Env.Data)
	}
	after := int64(0)
	for range 1000 {
		r, err := get(proc.Bearer(w.c.AdminToken, "GET", fmt.Sprintf("/admin/v1/orders?app_id=%d&limit=1000&after=%d", w.partner.AppID, after), nil))
		if err != nil {
			return nil, err
		}
		var page struct {
			Orders []json.RawMessage `json:"orders"`
		}
		if err := r.Data(&page); err != nil {
			return nil, err
		}
		if len(page.Orders) == 0 {
			break
		}
		for _, o := range page.Orders {
			var id struct {
				ID int64 `json:"id"`
			}
			_ = json.Unmarshal(o, &id)
			out[fmt.Sprintf("order %d", id.ID)] = canon(o)
			after = id.ID
		}
	}
	for _, card := range w.cards {
		r, err := get(proc.Bearer(w.c.AdminToken, "GET", "/admin/v1/benefit-cards/"+card.number, nil))
		if err != nil {
			return nil, err
		}
		out["card "+card.number] = canon(r.Env.Data)
	}
	after = 0
	for range 1000 {
		r, err := get(proc.SignedM(w.clinic, "GET", fmt.Sprintf("/open/v1/benefit-cards/fulfillments?role=provider&limit=1000&after=%d", after), nil))
		if err != nil {
			return nil, err
		}
		var page struct {
			Fulfillments []json.RawMessage `json:"fulfillments"`
		}
		if err := r.Data(&page); err != nil {
			return nil, err
		}
		if len(page.Fulfillments) == 0 {
			break
		}
		for _, f := range page.Fulfillments {
			var id struct {
				ID int64 `json:"fulfillment_record_id"`
			}
			_ = json.Unmarshal(f, &id)
			out[fmt.Sprintf("fulfillment %d", id.ID)] = canon(f)
			after = id.ID
		}
	}
	dels, err := w.c.AdminDeliveries(node, w.partner.AppID)
	if err != nil {
		return nil, err
	}
	for _, d := range dels {
		out[fmt.Sprintf("delivery %v", d["delivery_id"])] = string(proc.MustJSON(d))
	}
	return out, nil
}

// CheckRebuild snapshots the read models, has one node rebuild every
// read model, waits until it is caught up, and compares.
func (w *World) CheckRebuild() {
	before, err := w.readModelSnapshot(0)
	if err != nil {
		w.Fail("rebuild comparison", "snapshot before the rebuild: "+err.Error())
		return
	}
	asked := time.Now()
	r := w.c.Client.Send("rebuild", 0, -1, proc.Bearer(w.c.AdminToken, "POST", "/admin/v1/projections/read_models/rebuild", nil))
	if r.Status != http.StatusAccepted {
		w.Fail("rebuild comparison", "rebuild request: "+r.String())
		return
	}
	if err := w.c.WaitProjections(asked.Add(-time.Second), true, 120*time.Second); err != nil {
		w.Fail("rebuild comparison", "the rebuild did not finish: "+err.Error())
		return
	}
	// Once rebuilt the models must not change; a few tries absorb a read
	// that raced the end of the replay.
	var after map[string]string
	for try := 0; ; try++ {
		var err error
		if after, err = w.readModelSnapshot(0); err != nil {
			w.Fail("rebuild comparison", "snapshot after the rebuild: "+err.Error())
			return
		}
		if try == 2 || snapshotsEqual(before, after) {
			break
		}
		time.Sleep(3 * time.Second)
	}
	var keys []string
	for k := range before {
		keys = append(keys, k)
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		b, inB := before[k]
		a, inA := after[k]
		switch {
		case !inA:
			w.Fail("read models differ from a fresh rebuild", fmt.Sprintf("%s only before the rebuild: %s", k, b))
		case !inB:
			w.Fail("read models differ from a fresh rebuild", fmt.Sprintf("%s only after the rebuild: %s", k, a))
		case a != b:
			w.Fail("read models differ from a fresh rebuild", fmt.Sprintf("%s\n    before:  %s\n    rebuilt: %s", k, b, a))
		}
	}
	w.mu.Lock()
	w.counts["rebuild"] = map[string]int{fmt.Sprintf("compared %d read-model entries", len(before)): 1}
	w.mu.Unlock()
}

func snapshotsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

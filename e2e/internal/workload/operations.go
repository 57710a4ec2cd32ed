package workload

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/internal/proc"
)

type snapshotData struct {
	User struct {
		OpenUserID int64 `json:"open_user_id"`
	} `json:"user"`
	FamilyMembers []struct {
		MemberID  int64  `json:"member_id"`
		AppUserID string `json:"app_user_id"`
		Name      string `json:"name"`
	} `json:"family_members"`
}

func (w *World) register(n int) {
	id := fmt.Sprintf("c%s-%d", w.run, n)
	member := fmt.Sprintf("m%d-0", n)
	body := proc.MustJSON(map[string]any{"channel_user_id": id, "user": map[string]any{"name": fmt.Sprintf("用户%d", n)},
		"family_groups":  []any{map[string]any{"app_group_id": 1, "name": "home"}},
		"family_members": []any{map[string]any{"app_user_id": member, "app_group_id": 1, "name": "self", "relationship": "SELF"}}})
	r := w.c.Client.Send("register", w.c.Client.Next(), -1, proc.SignedM(w.partner.Creds, "POST", "/open/v1/channel/users", body))
	if w.record(r) != "acked" {
		return
	}
	at := time.Now()
	var d struct {
		OpenUserID    int64 `json:"open_user_id"`
		FamilyMembers []struct {
			MemberID  int64  `json:"member_id"`
			AppUserID string `json:"app_user_id"`
		} `json:"family_members"`
	}
	if err := r.Data(&d); err != nil || d.OpenUserID == 0 || len(d.FamilyMembers) != 1 {
		w.Fail("malformed answer", fmt.Sprintf("%s (%v)", r, err))
		return
	}
	u := &ackUser{channelID: id, openUserID: d.OpenUserID, members: map[string]int64{member: d.FamilyMembers[0].MemberID}, next: 1}
	w.mu.Lock()
	w.users = append(w.users, u)
	w.memberW[d.FamilyMembers[0].MemberID]++
	w.mu.Unlock()
	w.readAfter("register", id, r.Node, at, proc.SignedM(w.partner.Creds, "GET", "/open/v1/channel/users/0?channel_user_id="+id, nil), func(rr *proc.Reply) error {
		var s snapshotData
		if rr.Status != http.StatusOK {
			return fmt.Errorf("%d %s", rr.Status, rr.Raw)
		}
		if err := rr.Data(&s); err != nil {
			return err
		}
		if s.User.OpenUserID == d.OpenUserID {
			// Other operations may add members at once: look for this one.
			for _, m := range s.FamilyMembers {
				if m.MemberID == d.FamilyMembers[0].MemberID {
					return nil
				}
			}
		}
		return fmt.Errorf("acked open_user_id %d member %d, read %s", d.OpenUserID, d.FamilyMembers[0].MemberID, rr.Env.Data)
	})
}

// pickUser takes a random acknowledged user whose members no other
// operation is writing, locked; nil if none was free.
func (w *World) pickUser() *ackUser {
	for range 4 {
		w.mu.Lock()
		u := w.users[rand.IntN(len(w.users))]
		w.mu.Unlock()
		if u.mu.TryLock() {
			return u
		}
	}
	return nil
}

func (w *World) member(n int) {
	u := w.pickUser()
	if u == nil {
		w.mu.Lock()
		if w.counts["member"] == nil {
			w.counts["member"] = map[string]int{}
		}
		w.counts["member"]["skipped: every picked user busy"]++
		w.mu.Unlock()
		return
	}
	defer u.mu.Unlock()
	appUser := fmt.Sprintf("m%s-%d", strings.TrimPrefix(u.channelID, "c"+w.run+"-"), u.next)
	if rand.IntN(2) == 0 || len(u.members) == 0 {
		u.next++
	} else {
		for k := range u.members {
			appUser = k
			break
		}
	}
	name := fmt.Sprintf("n%d", n)
	path := fmt.Sprintf("/open/v1/channel/users/%d/family-members", u.openUserID)
	body := proc.MustJSON(map[string]any{"app_user_id": appUser, "app_group_id": 1, "name": name, "relationship": "SON"})
	r := w.c.Client.Send("member", w.c.Client.Next(), -1, proc.SignedM(w.partner.Creds, "POST", path, body))
	if w.record(r) != "acked" {
		return
	}
	at := time.Now()
	var d struct {
		MemberID int64 `json:"member_id"`
	}
	if err := r.Data(&d); err != nil || d.MemberID == 0 {
		w.Fail("malformed answer", fmt.Sprintf("%s (%v)", r, err))
		return
	}
	u.members[appUser] = d.MemberID
	w.mu.Lock()
	w.memberW[d.MemberID]++
	w.mu.Unlock()
	w.readAfter("member", fmt.Sprintf("%d (%s) of user %d", d.MemberID, name, u.openUserID), r.Node, at,
		proc.SignedM(w.partner.Creds, "GET", fmt.Sprintf("/open/v1/channel/users/%d", u.openUserID), nil), func(rr *proc.Reply) error {
			var s snapshotData
			if rr.Status != http.StatusOK {
				return fmt.Errorf("%d %s", rr.Status, rr.Raw)
			}
			if err := rr.Data(&s); err != nil {
				return err
			}
			for _, m := range s.FamilyMembers {
				if m.MemberID == d.MemberID {
					if m.Name != name {
						return fmt.Errorf("member %d has name %q, acked %q", d.MemberID, m.Name, name)
					}
					return nil
				}
			}
			return fmt.Errorf("member %d absent from %s", d.MemberID, rr.Env.Data)
		})
}

func (w *World) order(n int) {
	third := fmt.Sprintf("T%s-%d", w.run, n)
	body := proc.MustJSON(map[string]any{"third_order_id": third, "contact_person": "李雷", "contact_phone": "13812345678", "address": "北京市朝阳区",
		"items": []any{map[string]any{"goods_code": "CHAOS-1", "quantity": 1, "unit_price": 12345}}})
	copies := 1
	if n%3 == 0 {
		copies = 2 // the same order sent to two nodes at once
	}
	first := w.c.Client.Next()
	replies := make([]*proc.Reply, copies)
	var wg sync.WaitGroup
	for i := range copies {
		node := first
		if i == 1 {
			node = w.c.Client.Other(first)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			kind := "order"
			if copies == 2 {
				kind = "order (duplicate pair)"
			}
			replies[i] = w.c.Client.Send(kind, node, -1, proc.SignedM(w.partner.Creds, "POST", "/open/v1/order/create", body))
		}()
	}
	wg.Wait()
	o := &ackOrder{third: third, ids: map[int64]string{}}
	var ackedBy *proc.Reply
	for _, r := range replies {
		switch out := w.record(r); {
		case out == "acked":
			var d struct {
				ID        int64  `json:"id"`
				OrderCode string `json:"order_code"`
			}
			if err := r.Data(&d); err != nil || d.ID == 0 || d.OrderCode == "" {
				w.Fail("malformed answer", fmt.Sprintf("%s (%v)", r, err))
				continue
			}
			o.ids[d.ID] = d.OrderCode
			o.acks++
			ackedBy = r
		case r.Unknown():
			o.maybes++
		}
	}
	w.mu.Lock()
	w.orders[third] = o
	w.mu.Unlock()
	if len(o.ids) > 1 {
		w.Fail("third_order_id acknowledged as two orders", fmt.Sprintf("%s: %v (%s | %s)", third, o.ids, replies[0], replies[len(replies)-1]))
	}
	if ackedBy == nil {
		return
	}
	at := time.Now()
	for _, code := range o.ids {
		w.readAfter("order", third+" "+code, ackedBy.Node, at, proc.SignedM(w.partner.Creds, "GET", "/open/v1/order/detail?order_code="+code, nil), func(rr *proc.Reply) error {
			var d struct {
				ThirdOrderID string `json:"third_order_id"`
			}
			if rr.Status != http.StatusOK {
				return fmt.Errorf("%d %s", rr.Status, rr.Raw)
			}
			if err := rr.Data(&d); err != nil {
				return err
			}
			if d.ThirdOrderID != third {
				return fmt.Errorf("order %s has third_order_id %q", code, d.ThirdOrderID)
			}
			return nil
		})
		break
	}
}

func (w *World) verify(n int) {
	card := w.cards[rand.IntN(len(w.cards))]
	p1 := rand.IntN(len(w.providers))
	p2 := (p1 + 1 + rand.IntN(len(w.providers)-1)) % len(w.providers)
	first := w.c.Client.Next()
	nodes := []int{first, w.c.Client.Other(first)}
	replies := make([]*proc.Reply, 2)
	var wg sync.WaitGroup
	for i, p := range []int{p1, p2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := proc.MustJSON(map[string]any{"card_number": card.number, "benefit_item_id": w.item, "service_provider_id": w.providers[p],
				"remark": fmt.Sprintf("chaos card=%s op=%d.%d", card.number, n, i)})
			replies[i] = w.c.Client.Send("verify", nodes[i], -1, proc.SignedM(w.clinic, "POST", "/open/v1/benefit-cards/verify-use", body))
		}()
	}
	wg.Wait()
	for _, r := range replies {
		switch out := w.record(r); {
		case out == "acked":
			var d struct {
				RecordID  int64 `json:"fulfillment_record_id"`
				Remaining int64 `json:"remaining_quantity"`
			}
			if err := r.Data(&d); err != nil || d.RecordID == 0 {
				w.Fail("malformed answer", fmt.Sprintf("%s (%v)", r, err))
				continue
			}
			card.mu.Lock()
			card.acked[d.RecordID] = d.Remaining
			card.mu.Unlock()
			at := time.Now()
			w.readAfter("verify", card.number, r.Node, at, proc.SignedM(w.partner.Creds, "GET", "/open/v1/benefit-cards/detail?card_number="+card.number, nil), func(rr *proc.Reply) error {
				var cd struct {
					Items []struct {
						Remaining int64 `json:"remaining_quantity"`
					} `json:"items"`
				}
				if rr.Status != http.StatusOK {
					return fmt.Errorf("%d %s", rr.Status, rr.Raw)
				}
				if err := rr.Data(&cd); err != nil || len(cd.Items) != 1 {
					return fmt.Errorf("card detail %s (%v)", rr.Env.Data, err)
				}
				if cd.Items[0].Remaining > d.Remaining {
					return fmt.Errorf("remaining_quantity %d, but the verify-use (record %d) answered %d", cd.Items[0].Remaining, d.RecordID, d.Remaining)
				}
				return nil
			})
		case r.Unknown():
			card.mu.Lock()
			card.maybe++
			card.mu.Unlock()
		}
	}
}

// pullAllowed keeps report pulls under 40 a minute in the whole cluster,
// well inside the spec's 60 per minute per app.
func (w *World) pullAllowed() bool {
	w.pullMu.Lock()
	defer w.pullMu.Unlock()
	if time.Since(w.lastPull) < 1500*time.Millisecond {
		return false
	}
	w.lastPull = time.Now()
	return true
}

func (w *World) healthReport(n int) {
	w.mu.Lock()
	u := w.users[rand.IntN(len(w.users))]
	w.mu.Unlock()
	body := proc.MustJSON(map[string]any{"open_user_id": u.openUserID, "report_type": "BLOOD_PRESSURE", "request_report_id": fmt.Sprintf("R%s-%d", w.run, n),
		"measurement_no": fmt.Sprintf("M-%d", n), "raw_data": map[string]any{"n": n, "indicators": []any{map[string]any{"code": "heart_rate", "value": 72, "unit": "bpm"}}}})
	r := w.c.Client.Send("report-ingest", w.c.Client.Next(), -1, proc.Bearer(w.uploader, "POST", "/admin/v1/health-reports", body))
	if w.record(r) != "acked" {
		return
	}
	at := time.Now()
	var d struct {
		ID int64 `json:"id"`
	}
	if err := r.Data(&d); err != nil || d.ID == 0 {
		w.Fail("malformed answer", fmt.Sprintf("%s (%v)", r, err))
		return
	}
	w.mu.Lock()
	w.reports[d.ID] = u.openUserID
	w.mu.Unlock()
	if !w.pullAllowed() {
		return
	}
	// The pull is scheme H, counted as its own kind, and it reads the report
	// through a node other than the one that stored it.
	pr := w.c.Client.Send("report-pull", w.c.Client.Other(r.Node), r.Node, proc.SignedH(w.partner.Creds, "GET", fmt.Sprintf("/open/v1/health-reports/%d", d.ID)))
	if out := w.record(pr); out != "acked" && (pr.Down || pr.Unknown() || pr.Status == http.StatusTooManyRequests) {
		return
	}
	var got struct {
		ID int64 `json:"id"`
	}
	if pr.Status != http.StatusOK || pr.Data(&got) != nil || got.ID != d.ID {
		w.Fail("read after write missed the write (report pull)", fmt.Sprintf("report %d stored by node %d, pulled %v later through node %d: %d %s",
			d.ID, r.Node, time.Since(at).Round(time.Millisecond), pr.Node, pr.Status, pr.Raw))
	}
}

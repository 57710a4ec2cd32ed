package workload

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// slowRequest is the latency above which a request on a surviving node
// counts as disturbed by a kill, as a refusal does: the failover goal. On a
// machine so loaded that requests are already that slow before any kill,
// the bar rises to twice the 95th percentile of those requests (see
// slowBar), so the window measures the kill and not the machine.
const slowRequest = time.Second

// Summary logs what the run did.
func (w *World) Summary(took time.Duration, loadEnd time.Time, k *Killer, s *CheckpointSampler) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "chaos run %s: %v of load over %d nodes; apps worked on every node after %v\n", w.run, took.Round(time.Millisecond), len(w.c.Nodes), w.appAt.Round(time.Millisecond))
	kinds := make([]string, 0, len(w.counts))
	for kind := range w.counts {
		kinds = append(kinds, kind)
	}
	sort.Strings(kinds)
	for _, kind := range kinds {
		outs := make([]string, 0, len(w.counts[kind]))
		for out, n := range w.counts[kind] {
			outs = append(outs, fmt.Sprintf("%s %d", out, n))
		}
		sort.Strings(outs)
		fmt.Fprintf(&b, "  %-28s %s\n", kind, strings.Join(outs, ", "))
	}
	k.mu.Lock()
	fmt.Fprintf(&b, "kills: %d (slowest restart to ready %v)\n", len(k.Kills), k.slow.Round(time.Millisecond))
	for _, line := range k.Kills {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	k.mu.Unlock()
	attempts, total, first, last := w.rcv.Snapshot()
	retried := 0
	for _, as := range attempts {
		if len(as) > 1 {
			retried++
		}
	}
	fmt.Fprintf(&b, "webhooks: %d requests for %d deliveries (%d delivered, %d received more than once), first %s, last %s (%v after the load ended)\n",
		total, len(attempts), w.rcv.Delivered(), retried, first.Format("15:04:05.000"), last.Format("15:04:05.000"), last.Sub(loadEnd).Round(time.Millisecond))
	fmt.Fprintf(&b, "acknowledged: %d registers, %d member ids, %d third_order_ids, %d reports\n", len(w.users), len(w.memberW), len(w.orders), len(w.reports))
	fmt.Fprintf(&b, "longest gap between two acknowledged writes (takeover seen by clients): %v, ending %s\n", w.maxGap.Round(time.Millisecond), w.gapEnd.Format("15:04:05.000"))
	fmt.Fprintf(&b, "slowest request: %v, %s\n", w.maxLat.Round(time.Millisecond), w.maxLatOf)
	fmt.Fprintf(&b, "checkpoints: %d samples, %d regressions\n", s.Samples, len(s.Regressions))
	w.t.Log(b.String())
}

// FailoverWindows reports, per kill, how long requests answered by the
// surviving nodes were refused (5xx, broken connection) or slow (over the
// slow bar): from the kill to the end of the last such request. A request
// belongs to the last kill before it ended, so one cut off by the next kill
// is that kill's (and not a survivor's when the next kill took its node).
// Reported as median and maximum over the kills, with the count of such
// requests before the first kill as the baseline the machine gives without
// one.
func (w *World) FailoverWindows(k *Killer) (longest time.Duration) {
	w.mu.Lock()
	reqs := append([]answered(nil), w.answered...)
	w.mu.Unlock()
	k.mu.Lock()
	kills := append([]kill(nil), k.at...)
	k.mu.Unlock()
	if len(kills) == 0 {
		return 0
	}
	owner := func(r answered) int {
		return sort.Search(len(kills), func(i int) bool { return kills[i].at.After(r.end) }) - 1
	}
	var beforeKills []time.Duration
	for _, r := range reqs {
		if owner(r) < 0 && !r.refused {
			beforeKills = append(beforeKills, r.latency)
		}
	}
	bar := slowBar(beforeKills)
	windows := make([]time.Duration, len(kills))
	bad, total := make([]int, len(kills)), make([]int, len(kills))
	var before, beforeBad int
	for _, r := range reqs {
		isBad := r.refused || r.latency > bar
		switch j := owner(r); {
		case j < 0:
			before++
			if isBad {
				beforeBad++
			}
		case r.node == kills[j].node:
		default:
			total[j]++
			if isBad {
				bad[j]++
				windows[j] = max(windows[j], r.end.Sub(kills[j].at))
			}
		}
	}
	lines := []string{fmt.Sprintf("  before the first kill: %d of %d requests refused or slower than %v", beforeBad, before, bar)}
	for j, kl := range kills {
		lines = append(lines, fmt.Sprintf("  kill of node %d at %s: %d of %d requests on the survivors refused or slower than %v, window %v",
			kl.node, kl.at.Format("15:04:05.000"), bad[j], total[j], bar, windows[j].Round(time.Millisecond)))
	}
	sorted := append([]time.Duration(nil), windows...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	median := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		median = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	w.t.Logf("failover window on the surviving nodes (refused or slower than %v) per kill: median %v, max %v over %d kills\n%s",
		bar, median.Round(time.Millisecond), sorted[len(sorted)-1].Round(time.Millisecond), len(kills), strings.Join(lines, "\n"))
	return sorted[len(sorted)-1]
}

// slowBar is the latency above which a survivor's request counts as
// disturbed by a kill: slowRequest, or twice the 95th percentile of the
// answered requests before the first kill when the machine alone makes
// them slower than that. A takeover that waits for a lease's TTL still
// shows: its requests wait longer than any bar the load sets.
func slowBar(beforeKills []time.Duration) time.Duration {
	if len(beforeKills) < 20 {
		return slowRequest
	}
	sorted := append([]time.Duration(nil), beforeKills...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return max(slowRequest, 2*sorted[len(sorted)*95/100])
}

// WebhookTiming reports how long deliveries took to reach the receiver
// (first attempt's start after the event's occurred_at, which has whole
// seconds: up to a second too long) and the longest wait before a delivery
// whose attempt the receiver had answered 2xx was sent again (its sender
// died before recording the outcome: the claim had to end first).
func (w *World) WebhookTiming() {
	attempts, _, _, _ := w.rcv.Snapshot()
	var lags []time.Duration
	var resend time.Duration
	var resent int
	for _, as := range attempts {
		var b struct {
			OccurredAt time.Time `json:"occurred_at"`
		}
		if len(as) == 0 || json.Unmarshal(as[0].Body, &b) != nil || b.OccurredAt.IsZero() {
			continue
		}
		lags = append(lags, as[0].Start.Sub(b.OccurredAt))
		for i := 1; i < len(as); i++ {
			if as[i-1].Status/100 == 2 {
				resent++
				resend = max(resend, as[i].Start.Sub(as[i-1].End))
			}
		}
	}
	if len(lags) == 0 {
		return
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	w.t.Logf("webhooks: first attempt after the event (occurred_at in whole seconds) median %v, p99 %v, max %v over %d deliveries; "+
		"%d sent again after a 2xx answer (sender died before recording it), longest wait %v",
		lags[len(lags)/2].Round(time.Millisecond), lags[len(lags)*99/100].Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond),
		len(lags), resent, resend.Round(time.Millisecond))
}

package workload

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/e2e/internal/proc"
)

// Killer SIGKILLs one node at a time, cycling, and restarts it after down.
type Killer struct {
	c     *proc.Cluster
	every time.Duration
	down  time.Duration
	mu    sync.Mutex
	Kills []string
	at    []kill
	slow  time.Duration // longest restart until ready
	// watches follow each kill's leases until another process holds them.
	watches sync.WaitGroup
}

// kill is one SIGKILL: which node, when, and what became of the leases
// it held (leases filled in by its watch).
type kill struct {
	node   int
	at     time.Time
	leases *takeover
}

// takeover is how long after a kill every lease the killed process held
// (read just before the kill) had another holder: the failover itself,
// apart from how fast the survivors then answer.
type takeover struct {
	names []string
	took  time.Duration // from the kill until the last of names moved
	moved bool          // false: some lease was still the dead process's at the watch's end
}

// takeoverWatch bounds a kill's watch: far longer than a lease's TTL
// (10 s), so a takeover that waits for the TTL is measured, not cut off.
const takeoverWatch = 30 * time.Second

// NewKiller SIGKILLs a node of c every interval, keeping it down for down.
func NewKiller(c *proc.Cluster, every, down time.Duration) *Killer {
	return &Killer{c: c, every: every, down: down}
}

func (k *Killer) Run(ctx context.Context) {
	timer := time.NewTimer(k.every / 2)
	defer timer.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		n := k.c.Nodes[i%len(k.c.Nodes)]
		held := k.leasesOf(ctx, n.Idx)
		at := time.Now()
		n.Kill()
		tk := &takeover{}
		for name := range held {
			tk.names = append(tk.names, name)
		}
		sort.Strings(tk.names)
		k.mu.Lock()
		k.at = append(k.at, kill{node: n.Idx, at: at, leases: tk})
		k.mu.Unlock()
		k.watch(at, held, tk)
		select {
		case <-ctx.Done():
		case <-time.After(k.down):
		}
		err := n.Start()
		if err == nil {
			err = n.WaitReady(60 * time.Second)
		}
		took := time.Since(at)
		k.mu.Lock()
		line := fmt.Sprintf("node %d killed at %s, down %v, ready again after %v", n.Idx, at.Format("15:04:05.000"), k.down, took.Round(time.Millisecond))
		if err != nil {
			line = fmt.Sprintf("node %d killed at %s, restart failed: %v", n.Idx, at.Format("15:04:05.000"), err)
		}
		k.Kills = append(k.Kills, line)
		k.slow = max(k.slow, took)
		k.mu.Unlock()
		timer.Reset(max(time.Second, k.every-time.Since(at)))
	}
}

// leases reads every lease's holder over conn.
func leases(ctx context.Context, conn *pgx.Conn) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rows, err := conn.Query(ctx, `SELECT name, holder FROM leases WHERE expires_at > now()`)
	if err != nil {
		return nil, err
	}
	holders := map[string]string{}
	for rows.Next() {
		var name, holder string
		if err := rows.Scan(&name, &holder); err != nil {
			return nil, err
		}
		holders[name] = holder
	}
	return holders, rows.Err()
}

// connect opens a connection to the cluster's database.
func (k *Killer) connect(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return pgx.Connect(ctx, k.c.DB)
}

// leasesOf is the leases node idx's process holds, by name, with its
// holder id (none when the database cannot be read: that kill then
// reports no takeover).
func (k *Killer) leasesOf(ctx context.Context, idx int) map[string]string {
	conn, err := k.connect(ctx)
	if err != nil {
		return nil
	}
	defer conn.Close(context.Background())
	holders, err := leases(ctx, conn)
	if err != nil {
		return nil
	}
	held := map[string]string{}
	for name, holder := range holders {
		if k.c.NodeOf(holder) == idx {
			held[name] = holder
		}
	}
	return held
}

// watch polls the leases table every 20 ms from the kill at until no
// lease in dead (name to the killed process's holder id) names that
// process (a survivor or the restarted node, a process of its own, took
// it), for at most takeoverWatch. It runs beside the killer, which
// restarts the node meanwhile.
func (k *Killer) watch(at time.Time, dead map[string]string, tk *takeover) {
	if len(dead) == 0 {
		return
	}
	k.watches.Add(1)
	go func() {
		defer k.watches.Done()
		ctx := context.Background()
		var conn *pgx.Conn // one per watch, opened again only after a failure
		defer func() {
			if conn != nil {
				conn.Close(ctx)
			}
		}()
		for time.Since(at) < takeoverWatch {
			var now map[string]string
			var err error
			if conn == nil {
				conn, err = k.connect(ctx)
			}
			if err == nil {
				if now, err = leases(ctx, conn); err != nil {
					conn.Close(ctx)
					conn = nil
				}
			}
			if err == nil && movedAll(dead, now) {
				k.mu.Lock()
				tk.took, tk.moved = time.Since(at), true
				k.mu.Unlock()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
}

// movedAll says whether every lease in dead has a live holder other than
// the one dead names.
func movedAll(dead, now map[string]string) bool {
	for name, holder := range dead {
		if h, ok := now[name]; !ok || h == holder {
			return false
		}
	}
	return true
}

// Takeovers waits for the kills' watches, logs per kill which leases the
// killed process held and how long until others held them all, and returns
// the longest (takeoverWatch when a lease never moved).
func (k *Killer) Takeovers(t interface{ Logf(string, ...any) }) (longest time.Duration) {
	k.watches.Wait()
	k.mu.Lock()
	defer k.mu.Unlock()
	var lines []string
	var tooks []time.Duration
	for _, kl := range k.at {
		tk := kl.leases
		switch {
		case tk == nil || len(tk.names) == 0:
			lines = append(lines, fmt.Sprintf("  kill of node %d at %s: it held no lease", kl.node, kl.at.Format("15:04:05.000")))
			continue
		case !tk.moved:
			tk.took = takeoverWatch
			lines = append(lines, fmt.Sprintf("  kill of node %d at %s: %s, not all held by another process after %v",
				kl.node, kl.at.Format("15:04:05.000"), leaseList(tk.names), takeoverWatch))
		default:
			lines = append(lines, fmt.Sprintf("  kill of node %d at %s: %s, all held by another process after %v",
				kl.node, kl.at.Format("15:04:05.000"), leaseList(tk.names), tk.took.Round(time.Millisecond)))
		}
		tooks = append(tooks, tk.took)
		longest = max(longest, tk.took)
	}
	if len(tooks) == 0 {
		t.Logf("lease takeover: no killed process held a lease\n%s", strings.Join(lines, "\n"))
		return 0
	}
	sort.Slice(tooks, func(i, j int) bool { return tooks[i] < tooks[j] })
	t.Logf("lease takeover (from the kill until another process held every lease the killed one held): median %v, max %v over %d kills of a holder\n%s",
		tooks[len(tooks)/2].Round(time.Millisecond), longest.Round(time.Millisecond), len(tooks), strings.Join(lines, "\n"))
	return longest
}

// leaseList is "1 lease (a)" or "3 leases (a, b, c)".
func leaseList(names []string) string {
	if len(names) == 1 {
		return "1 lease (" + names[0] + ")"
	}
	return fmt.Sprintf("%d leases (%s)", len(names), strings.Join(names, ", "))
}

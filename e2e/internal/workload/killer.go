package workload

import (
	"context"
	"fmt"
	"sync"
	"time"

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
}

// kill is one SIGKILL: which node, when.
type kill struct {
	node int
	at   time.Time
}

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
		at := time.Now()
		n.Kill()
		k.mu.Lock()
		k.at = append(k.at, kill{node: n.Idx, at: at})
		k.mu.Unlock()
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

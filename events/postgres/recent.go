package postgres

import (
	"bytes"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// Own commits served to this process's followers. Every commit of this
// process wakes its followers, and each of them would read back, in a
// Postgres transaction, the events the committer has just written: about
// one read per append, a third of a webhook delivery's transactions on a
// quiet node. The committer knows those events exactly (their positions,
// revisions, bytes and the transaction's timestamp, which is the created
// column's default), so it keeps the latest run of them here and a
// follower's read that starts inside the run is answered from memory.
//
// What makes a read from here as good as one from Postgres:
//
//   - The run is a stretch of the log as committed: the committer numbered
//     it under the append lock right after the head it read there, and
//     positions are gapless, so the rows at those positions are these
//     events and no other.
//   - The run ends at the log's end as far as this process knows: any
//     wake of the listener other than the echo of this process's own
//     commit (another process's append, a reconnect, the poll) drops the
//     run before it wakes the followers, and a commit that another wake
//     overtook, or that failed, does not start a run. A follower takes its
//     wake channel before it reads (events/internal/tail), so an append of
//     another process that lands after the run either dropped the run
//     before the read (the read goes to Postgres) or wakes the follower
//     after it (the follower reads again).
//   - A follower whose read starts before the run, or with the run
//     dropped, reads from Postgres as before.

// recentMax bounds the events kept; followers a page behind read from
// Postgres as before.
const recentMax = 1024

// recentLog is the latest run of this process's own commits.
type recentLog struct {
	mu sync.Mutex
	// epoch counts the wakes that may mean the log grew without this
	// process: a commit that began under an older epoch starts no run.
	epoch uint64
	// listening is whether the listener's LISTEN holds: without it an
	// append of another process would drop nothing.
	listening bool
	valid     bool
	recs      []events.Recorded // positions lo, lo+1, ...
}

// begin is read before a commit takes the append lock.
func (c *recentLog) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// drop forgets the run: the log may have grown without this process.
func (c *recentLog) drop() {
	c.mu.Lock()
	c.epoch++
	c.valid, c.recs = false, nil
	c.mu.Unlock()
}

// setListening records whether the listener's LISTEN holds, and drops
// the run either way (a reconnect may have missed notifications).
func (c *recentLog) setListening(on bool) {
	c.mu.Lock()
	c.listening = on
	c.epoch++
	c.valid, c.recs = false, nil
	c.mu.Unlock()
}

// committed adds a commit's rows (numbered after head, under the append
// lock, in a transaction that began at created) that began at epoch.
func (c *recentLog) committed(epoch uint64, head int64, rows newRows, created time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch != c.epoch || !c.listening {
		c.valid, c.recs = false, nil
		return
	}
	if !c.valid || len(c.recs) == 0 || c.recs[len(c.recs)-1].Position.Commit != uint64(head) {
		c.recs = c.recs[:0]
	}
	created = created.UTC()
	for i, pos := range rows.pos {
		c.recs = append(c.recs, events.Recorded{
			Position: position(pos),
			Stream:   rows.stream[i],
			Revision: uint64(rows.rev[i]),
			ID:       rows.id[i],
			Type:     rows.typ[i],
			Data:     bytes.Clone(rows.data[i]),
			Meta:     bytes.Clone(rows.meta[i]),
			Created:  created,
		})
	}
	if n := len(c.recs); n > 2*recentMax {
		c.recs = append([]events.Recorded(nil), c.recs[n-recentMax:]...)
	}
	c.valid = len(c.recs) > 0
}

// read answers a read of up to limit events from position start when the
// run covers it (start inside the run or right after it); ok is false
// otherwise. The slice is the caller's own.
func (c *recentLog) read(start int64, limit int) (recs []events.Recorded, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || len(c.recs) == 0 {
		return nil, false
	}
	lo := int64(c.recs[0].Position.Commit)
	i := start - lo
	if i < 0 || i > int64(len(c.recs)) {
		return nil, false
	}
	j := min(int64(len(c.recs)), i+int64(limit))
	return append([]events.Recorded{}, c.recs[i:j]...), true
}

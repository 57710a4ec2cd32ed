package node

import (
	"context"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/events"
)

// prepareUserKeys makes the data keys of a freshly reserved block of user
// ids in one batch (one fsync of the key log, or one Postgres statement),
// so that registers of the block find their key cached and wait for no key
// store write. A failure is only logged: each register then creates its
// user's key itself, durably, before its events are appended.
func (n *Node) prepareUserKeys(ctx context.Context, first, last int64) {
	subjects := make([]string, 0, last-first+1)
	for id := first; id <= last; id++ {
		subjects = append(subjects, commands.ErasureSubject(id))
	}
	if err := n.Keys.Prepare(ctx, subjects); err != nil {
		n.log.Warn("could not make the data keys of a block of user ids ahead of use", "first", first, "last", last, "err", err)
	}
}

// forgotKey is called by the erasure follower each time this node drops an
// erased person's key from its cache, so a test can wait for it.
func (n *Node) forgotKey(subject string, at events.Position) {
	n.erasureMu.Lock()
	if n.erasureSeen.Less(at) {
		n.erasureSeen = at
	}
	n.erasureMu.Unlock()
}

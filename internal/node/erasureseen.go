package node

import "github.com/healthtech/partner-open-platform/events"

// ErasureSeen is the position of the last erasure this node's follower has
// acted on: from then on no decrypt on this node uses that person's key.
// The end-to-end tests (e2e/erasure) wait on it to prove that another node
// stops revealing an erased person once its follower has seen the erasure,
// without polling the answer they assert on.
func (n *Node) ErasureSeen() events.Position {
	n.erasureMu.Lock()
	defer n.erasureMu.Unlock()
	return n.erasureSeen
}

package node

import "github.com/healthtech/partner-open-platform/events"

// ErasureSeen is the position of the last erasure this node's follower has
// acted on: from then on no decrypt on this node uses that person's key.
func (n *Node) ErasureSeen() events.Position {
	n.erasureMu.Lock()
	defer n.erasureMu.Unlock()
	return n.erasureSeen
}

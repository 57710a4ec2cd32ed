package node

import "github.com/healthtech/partner-open-platform/commands"

// WriteSide is the node's own command handlers, the ones its HTTP edges
// call: a tool that writes a large log in-process (platformbench seed)
// goes through the same validation, id allocation, per-person sealing and
// appends as a partner's request, without the HTTP cost per event.
type WriteSide struct {
	Users   *commands.Users
	Reports *commands.Reports
}

// WriteSide returns the handlers; they stay valid until Close.
func (n *Node) WriteSide() WriteSide { return n.writeSide }

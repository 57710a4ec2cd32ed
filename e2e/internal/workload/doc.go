// Package workload is the steady partner load the chaos and rolling
// upgrade tests put on a cluster of platform processes (e2e/internal/proc),
// with a ledger of what the platform acknowledged (World), and the checks
// they make afterwards of what partners and operators observe: every
// acknowledged write reads back, no card is over-consumed, each
// third_order_id is one order, every webhook arrived signed with a stable
// id and body, checkpoints never moved back, and the read models equal a
// fresh rebuild. Killer SIGKILLs nodes in turn; CheckpointSampler watches
// the checkpoints table.
package workload

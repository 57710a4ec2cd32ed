package filelog

import "time"

// OpenWaiting is Open with the wait before each fsync made by wait.
func OpenWaiting(path string, wait func() <-chan time.Time) (*Nonces, error) { return open(path, wait) }

// PeriodicFsyncs is how many fsyncs the periodic sync has made.
func (n *Nonces) PeriodicFsyncs() int {
	n.wmu.Lock()
	defer n.wmu.Unlock()
	return n.fsyncs
}

// Writes is how many writes of queued records the store has made.
func (n *Nonces) Writes() int {
	n.wmu.Lock()
	defer n.wmu.Unlock()
	return n.writes
}

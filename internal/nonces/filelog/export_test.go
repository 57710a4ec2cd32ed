package filelog

import "time"

// OpenTicked is Open with the periodic fsync driven by tick.
func OpenTicked(path string, tick <-chan time.Time) (*Nonces, error) { return open(path, tick) }

// PeriodicFsyncs is how many fsyncs the periodic sync has made.
func (n *Nonces) PeriodicFsyncs() int {
	n.wmu.Lock()
	defer n.wmu.Unlock()
	return n.fsyncs
}

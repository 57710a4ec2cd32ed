package metrics

import "sync"

// series keeps the series of a vector a hot path observes, found by a key
// of the path's own: WithLabelValues builds a label slice, validates and
// hashes the labels and looks the series up under the vector's lock on
// every call, which a request or a projection's batch then repeats for a
// series it already has. The key set is bounded by what the labels are
// (routes, methods, statuses, outcomes, projection names).
type series[K comparable, M any] struct {
	mu sync.RWMutex
	m  map[K]M
}

// get is k's series, made by create the first time.
func (s *series[K, M]) get(k K, create func() M) M {
	s.mu.RLock()
	v, ok := s.m[k]
	s.mu.RUnlock()
	if ok {
		return v
	}
	v = create()
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[K]M)
	}
	s.m[k] = v
	s.mu.Unlock()
	return v
}

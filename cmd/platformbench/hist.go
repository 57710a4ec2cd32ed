package main

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Latencies collects every measured sample of one scenario. Samples are kept
// whole (a measured window of a few seconds holds at most a few hundred
// thousand), so percentiles are exact, not bucketed; each worker records into
// its own slice and the slices are merged once, so recording never contends.
type Latencies struct {
	mu      sync.Mutex
	samples []time.Duration
	sorted  bool
}

// Add merges one worker's samples into the set.
func (l *Latencies) Add(ds []time.Duration) {
	l.mu.Lock()
	l.samples = append(l.samples, ds...)
	l.sorted = false
	l.mu.Unlock()
}

// Quantile returns the nearest-rank q-quantile (0 < q <= 1) of the samples,
// or 0 when there are none: the smallest sample with at least q of all
// samples at or below it, so p99 of 100 samples is the 99th smallest.
func (l *Latencies) Quantile(q float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.samples)
	if n == 0 {
		return 0
	}
	if !l.sorted {
		slices.Sort(l.samples)
		l.sorted = true
	}
	rank := int(math.Ceil(q*float64(n))) - 1
	rank = max(0, min(rank, n-1))
	return l.samples[rank]
}

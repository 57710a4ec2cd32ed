package main

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

func TestQuantileNearestRank(t *testing.T) {
	var l Latencies
	if got := l.Quantile(0.5); got != 0 {
		t.Fatalf("empty p50 = %s, want 0", got)
	}
	// 1..100 ms, shuffled: p50 is the 50th, p99 the 99th, p100 the largest.
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(i+1) * time.Millisecond
	}
	rand.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
	l.Add(ds[:37])
	l.Add(ds[37:])
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0.001, time.Millisecond}} {
		if got := l.Quantile(c.q); got != c.want {
			t.Errorf("q%.3f = %s, want %s", c.q, got, c.want)
		}
	}
	if l.Count() != 100 {
		t.Errorf("count %d", l.Count())
	}
	// One slow outlier in 1000 moves p99 not at all, p100 all the way.
	var m Latencies
	one := make([]time.Duration, 999)
	for i := range one {
		one[i] = time.Millisecond
	}
	m.Add(append(one, time.Second))
	if m.Quantile(0.99) != time.Millisecond || m.Quantile(1) != time.Second {
		t.Errorf("outlier: p99 %s p100 %s", m.Quantile(0.99), m.Quantile(1))
	}
}

// Workers merge their samples concurrently; none is lost.
func TestLatenciesConcurrentAdd(t *testing.T) {
	var l Latencies
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				l.Add([]time.Duration{time.Duration(i)})
				_ = l.Quantile(0.5)
			}
		}()
	}
	wg.Wait()
	if l.Count() != 800 {
		t.Fatalf("count %d, want 800", l.Count())
	}
}

// Count is how many samples were recorded.
func (l *Latencies) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.samples)
}

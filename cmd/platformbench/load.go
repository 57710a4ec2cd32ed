package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Op is one request of a scenario, made by worker w as its i-th call; it
// returns an error when the platform did not answer as the scenario expects,
// so a failing request is counted, never timed as a success.
type Op func(ctx context.Context, w, i int) error

// Phase is how long a closed-loop run warms up and then measures.
type Phase struct {
	Clients int
	Warmup  time.Duration
	Window  time.Duration
	// Rate, when positive, offers a fixed rate (calls per second over all
	// clients) instead of a closed loop, so latency downstream of the
	// call (a webhook's delivery) is measured at a known load rather than
	// at saturation; a client that falls behind its schedule calls at once.
	Rate float64
	// FromDue, with a Rate, times each call from when it was due rather
	// than from when it started: a call that waited behind a slow one
	// counts its wait, as a client sending at a fixed rate would see it
	// (otherwise a stall delays the calls after it and hides in no latency).
	FromDue bool
	// CPU, when set, samples the CPU counters at the window's start and
	// end, so the measurement carries what the window cost (Measured.CPU).
	CPU func() cpuSample
	// Timeline, when set, receives every measured call's offset into the
	// window and its latency.
	Timeline *Timeline
}

// Measured is the outcome of a closed-loop run: operations completed in the
// measured window, their latencies, and the failures seen (the first one
// kept to say why).
type Measured struct {
	OK       int64
	Errors   int64
	Elapsed  time.Duration
	Lat      *Latencies
	FirstErr error
	// CPU is what the measured window cost (zero when not sampled).
	CPU CPUUse
}

// Rate is successful operations per second of the measured window.
func (m Measured) Rate() float64 {
	if m.Elapsed <= 0 {
		return 0
	}
	return float64(m.OK) / m.Elapsed.Seconds()
}

// closedLoop runs op from p.Clients workers (paced to p.Rate when set), each issuing its next request
// as soon as the previous answered (a closed loop: offered load follows the
// platform's speed, so the rate is its capacity at that concurrency). Calls
// that start during the warm-up are not measured; calls that start in the
// window are, and the run ends when the window closes (a call still in
// flight then finishes but is not counted, so the rate is not inflated by
// a drain).
func closedLoop(ctx context.Context, p Phase, op Op) Measured {
	lat := &Latencies{}
	var ok, bad atomic.Int64
	var firstErr atomic.Pointer[error]
	start := time.Now()
	measureFrom := start.Add(p.Warmup)
	end := measureFrom.Add(p.Window)
	if p.Timeline != nil {
		p.Timeline.start = measureFrom
	}
	runCtx, cancel := context.WithDeadline(ctx, end.Add(30*time.Second))
	defer cancel()
	var wg sync.WaitGroup
	var cpu CPUUse
	sampled := make(chan struct{})
	if p.CPU == nil {
		close(sampled)
	} else {
		go func() {
			defer close(sampled)
			if !sleepUntil(runCtx, measureFrom) {
				return
			}
			from := p.CPU()
			if sleepUntil(runCtx, end) {
				cpu = p.CPU().since(from)
			}
		}()
	}
	// With a rate, worker w's i-th call is due at start + (i*Clients+w)/Rate.
	var every time.Duration
	if p.Rate > 0 {
		every = time.Duration(float64(time.Second) * float64(p.Clients) / p.Rate)
	}
	for w := 0; w < p.Clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			local := make([]time.Duration, 0, 4096)
			var timed []timedCall
			defer func() {
				lat.Add(local)
				if p.Timeline != nil {
					p.Timeline.add(timed)
				}
			}()
			for i := 0; ; i++ {
				var due time.Time
				if every > 0 {
					due = start.Add(time.Duration(i)*every + time.Duration(w)*every/time.Duration(p.Clients))
					if wait := time.Until(due); wait > 0 {
						select {
						case <-time.After(wait):
						case <-runCtx.Done():
							return
						}
					}
				}
				t0 := time.Now()
				if !t0.Before(end) || runCtx.Err() != nil {
					return
				}
				err := op(runCtx, w, i)
				t1 := time.Now()
				if t0.Before(measureFrom) || t1.After(end) {
					continue
				}
				if err != nil {
					bad.Add(1)
					e := fmt.Errorf("worker %d call %d: %w", w, i, err)
					firstErr.CompareAndSwap(nil, &e)
					continue
				}
				ok.Add(1)
				from := t0
				if p.FromDue && !due.IsZero() && due.Before(t0) {
					from = due
				}
				local = append(local, t1.Sub(from))
				if p.Timeline != nil {
					timed = append(timed, timedCall{At: from.Sub(measureFrom), Lat: t1.Sub(from)})
				}
			}
		}(w)
	}
	wg.Wait()
	<-sampled
	m := Measured{OK: ok.Load(), Errors: bad.Load(), Elapsed: p.Window, Lat: lat, CPU: cpu}
	if e := firstErr.Load(); e != nil {
		m.FirstErr = *e
	}
	return m
}

// sleepUntil waits until t; false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// forEach runs f for i in [0, n) on c workers and returns the first error:
// the set-up's bounded parallelism.
func forEach(ctx context.Context, c, n int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for w := 0; w < max(1, min(c, n)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

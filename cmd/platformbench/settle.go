package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// eventsBehind sums platform_follower_events_behind over every follower
// (read models, the app directory, the relay) in a /metrics text.
func eventsBehind(metrics io.Reader) (float64, bool) {
	sum, found := 0.0, false
	sc := bufio.NewScanner(metrics)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "platform_follower_events_behind") {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		sum += v
		found = true
	}
	return sum, found
}

// settle waits, at most bound, until every follower of the log has caught
// up, so a scenario is not measured while the platform still works off the
// previous one's events. It says how long it waited and what was left.
func (b *Bench) settle(ctx context.Context, bound time.Duration) string {
	start := time.Now()
	deadline := start.Add(bound)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.P.Base+"/metrics", nil)
		if err != nil {
			return "settle: " + err.Error()
		}
		res, err := b.P.HTTP.Do(req)
		if err != nil {
			return "settle: " + err.Error()
		}
		behind, found := eventsBehind(res.Body)
		res.Body.Close()
		if !found {
			return "settle: no platform_follower_events_behind metric"
		}
		if behind == 0 {
			return fmt.Sprintf("settled in %s", time.Since(start).Round(100*time.Millisecond))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Sprintf("not settled after %s: %.0f events behind", bound, behind)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

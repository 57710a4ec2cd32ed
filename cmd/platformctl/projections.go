package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// rebuildPoll is how often `rebuild` reads the projection's progress.
var rebuildPoll = 500 * time.Millisecond

// projectionStats is one projection as GET /admin/v1/projections shows it.
type projectionStats struct {
	Name       string   `json:"name"`
	Position   position `json:"position"`
	Applied    uint64   `json:"events_applied"`
	Rate       float64  `json:"events_per_second"`
	CaughtUp   bool     `json:"caught_up"`
	Ready      bool     `json:"ready"`
	Rebuilding bool     `json:"rebuilding"`
	Percent    float64  `json:"percent"`
	ETASeconds float64  `json:"eta_seconds"`
	LastError  string   `json:"last_error"`
	Since      string   `json:"since"`
	Owner      string   `json:"owner"` // the node projecting a read model
}

// listProjections returns the projections, raw and decoded.
func (c *cli) listProjections(ctx context.Context, api *client) (json.RawMessage, []json.RawMessage, []projectionStats, error) {
	data, err := api.do(ctx, "GET", "/admin/v1/projections", nil)
	if err != nil {
		return nil, nil, nil, err
	}
	var out struct {
		Projections []json.RawMessage `json:"projections"`
	}
	if err := decode(data, &out); err != nil {
		return nil, nil, nil, err
	}
	stats := make([]projectionStats, len(out.Projections))
	for i, raw := range out.Projections {
		if err := decode(raw, &stats[i]); err != nil {
			return nil, nil, nil, err
		}
	}
	return data, out.Projections, stats, nil
}

func (c *cli) projections(args []string) error {
	fs := c.flags("projections")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("projections takes no arguments, got %q", rest)
	}
	api, err := c.api()
	if err != nil {
		return err
	}
	data, _, stats, err := c.listProjections(c.ctx, api)
	if err != nil {
		return err
	}
	if c.g.json {
		return printJSON(c.stdout, data)
	}
	t := newTable(c.stdout, "NAME", "POSITION", "EVENTS_APPLIED", "EVENTS_PER_SECOND", "CAUGHT_UP", "OWNER", "LAST_ERROR")
	for _, s := range stats {
		t.row(s.Name, s.Position.String(), strconv.FormatUint(s.Applied, 10), strconv.FormatFloat(s.Rate, 'f', 1, 64),
			strconv.FormatBool(s.CaughtUp), s.Owner, s.LastError)
	}
	return t.flush()
}

func (c *cli) rebuild(args []string) error {
	fs := c.flags("rebuild")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up waiting for the replay after this long")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if len(rest) != 1 || rest[0] == "" {
		return usagef("rebuild needs exactly one projection NAME argument (see platformctl projections)")
	}
	if *timeout <= 0 {
		return usagef("rebuild: --timeout must be positive")
	}
	name := rest[0]
	api, err := c.api()
	if err != nil {
		return err
	}

	start := time.Now()
	ctx, cancel := context.WithTimeout(c.ctx, *timeout)
	defer cancel()
	err = c.watchRebuild(ctx, api, name, start)
	if errors.Is(err, context.DeadlineExceeded) && c.ctx.Err() == nil {
		return fmt.Errorf("rebuild %s: not caught up after %s; the replay goes on in the server (see platformctl projections)", name, *timeout)
	}
	return err
}

// watchRebuild starts the rebuild (NAME, or every read model for
// read_models) and prints progress until each rebuilt projection is ready:
// it has replayed the log as far as it reached when the rebuild began.
func (c *cli) watchRebuild(ctx context.Context, api *client, name string, start time.Time) error {
	data, err := api.do(ctx, "POST", "/admin/v1/projections/"+url.PathEscape(name)+"/rebuild", nil)
	if err != nil {
		return err
	}
	var started struct {
		Projections []projectionStats `json:"projections"`
	}
	if err := decode(data, &started); err != nil {
		return err
	}
	if c.g.json {
		if err := printJSONLine(c.stdout, data); err != nil {
			return err
		}
	}
	watched := map[string]projectionStats{}
	for _, s := range started.Projections {
		watched[s.Name] = s
	}
	done := func() bool {
		for _, s := range watched {
			if !s.Ready {
				return false
			}
		}
		return true
	}
	for !done() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(rebuildPoll):
		}
		_, raws, stats, err := c.listProjections(ctx, api)
		if err != nil {
			return err
		}
		seen := 0
		for i, st := range stats {
			if _, ok := watched[st.Name]; !ok {
				continue
			}
			seen++
			watched[st.Name] = st
			if err := c.printProgress(st, raws[i]); err != nil {
				return err
			}
		}
		if seen != len(watched) {
			return fmt.Errorf("rebuild %s: the server no longer lists every projection rebuilt", name)
		}
	}
	if c.g.json {
		return nil
	}
	secs := time.Since(start).Seconds()
	for _, s := range started.Projections {
		s = watched[s.Name]
		rate := 0.0
		if secs > 0 {
			rate = float64(s.Applied) / secs
		}
		if _, err := fmt.Fprintf(c.stdout, "%s: rebuilt %d events in %.1f s, %.0f ev/s\n", s.Name, s.Applied, secs, rate); err != nil {
			return err
		}
	}
	return nil
}

// printProgress prints one progress line of a rebuild.
func (c *cli) printProgress(s projectionStats, raw json.RawMessage) error {
	if c.g.json {
		return printJSONLine(c.stdout, raw)
	}
	line := fmt.Sprintf("%s: %d events, %.0f ev/s, %.1f%% of the log, position %s", s.Name, s.Applied, s.Rate, s.Percent, s.Position)
	if !s.Ready && s.ETASeconds > 0 {
		line += fmt.Sprintf(", about %s left", (time.Duration(s.ETASeconds * float64(time.Second))).Round(time.Second))
	}
	if s.Owner != "" {
		line += ", projected by " + s.Owner
	}
	if s.LastError != "" {
		line += ", last error: " + s.LastError
	}
	_, err := fmt.Fprintln(c.stdout, line)
	return err
}

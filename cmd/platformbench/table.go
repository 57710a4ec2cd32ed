package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Row is one line of the result table: a scenario on one store, with its
// baseline measured in the same run and the ratio rate/baseline rate.
type Row struct {
	Scenario string  `json:"scenario"`
	Store    string  `json:"store"`
	Clients  int     `json:"clients"`
	Rate     float64 `json:"rate_per_s"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
	Errors   int64   `json:"errors"`
	Baseline string  `json:"baseline,omitempty"`
	BaseRate float64 `json:"baseline_rate_per_s,omitempty"`
	Ratio    float64 `json:"ratio,omitempty"`
	Note     string  `json:"note,omitempty"`
}

// rowOf turns a measurement into a row against a baseline (base may be
// nil: a baseline row itself).
func rowOf(scenario, store string, clients int, m Measured, baseName string, base *Measured) Row {
	r := Row{Scenario: scenario, Store: store, Clients: clients, Rate: m.Rate(), Errors: m.Errors}
	if m.Lat != nil {
		r.P50ms, r.P99ms = ms(m.Lat.Quantile(0.5)), ms(m.Lat.Quantile(0.99))
	}
	if base != nil {
		r.Baseline, r.BaseRate = baseName, base.Rate()
		if r.BaseRate > 0 {
			r.Ratio = r.Rate / r.BaseRate
		}
	}
	if m.FirstErr != nil {
		r.Note = "first error: " + truncate(m.FirstErr.Error(), 160)
	}
	return r
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func truncate(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// writeTable prints the rows as one aligned table: rate, p50, p99, the
// baseline named and its rate, the ratio, errors; notes follow the table.
func writeTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tstore\tclients\trate/s\tp50 ms\tp99 ms\terrors\tbaseline\tbaseline/s\tratio\t")
	for _, r := range rows {
		ratio, baseRate, base := "-", "-", "-"
		if r.Baseline != "" {
			base, baseRate, ratio = r.Baseline, fmt.Sprintf("%.0f", r.BaseRate), fmt.Sprintf("%.2f×", r.Ratio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.2f\t%.2f\t%d\t%s\t%s\t%s\t\n",
			r.Scenario, r.Store, r.Clients, r.Rate, r.P50ms, r.P99ms, r.Errors, base, baseRate, ratio)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	for _, r := range rows {
		if r.Note != "" {
			fmt.Fprintf(w, "note: %s (%s): %s\n", r.Scenario, r.Store, r.Note)
		}
	}
	return nil
}

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
	// The window's CPU (absent where /proc does not tell): the shares of
	// all cores' time busy and stolen by the hypervisor, and CPU per
	// operation of the whole machine (every process and the kernel), of
	// the platform and of the load process. BaseCPUus is the baseline's
	// machine CPU per operation.
	Busy          float64 `json:"machine_busy,omitempty"`
	Steal         float64 `json:"machine_steal,omitempty"`
	Cores         int     `json:"cores,omitempty"`
	CPUus         float64 `json:"machine_cpu_us_per_op,omitempty"`
	PlatformCPUus float64 `json:"platform_cpu_us_per_op,omitempty"`
	LoadCPUus     float64 `json:"load_cpu_us_per_op,omitempty"`
	BaseCPUus     float64 `json:"baseline_machine_cpu_us_per_op,omitempty"`
	// webhook-cost's columns (in its notes): CPU of the platform and its
	// Postgres server together, of the server alone, and the platform
	// database's transactions, per delivery (per second on the idle row).
	SystemCPUus   float64 `json:"system_cpu_us_per_op,omitempty"`
	PostgresCPUus float64 `json:"postgres_cpu_us_per_op,omitempty"`
	PGXacts       float64 `json:"pg_xacts_per_op,omitempty"`
}

// Ceiling is the rate the machine's cores would give at this CPU per
// operation if they did nothing else (0: not measured): the most a
// CPU-bound scenario can reach on this machine without costing less.
func (r Row) Ceiling() float64 {
	if r.CPUus <= 0 || r.Cores <= 0 {
		return 0
	}
	return float64(r.Cores) * 1e6 / r.CPUus
}

// CPURatio is the row's machine CPU per operation over its baseline's (0:
// not measured). Where both saturate the cores, 1/CPURatio is the most
// the rate ratio can be: a row at 4× its baseline's CPU per operation
// cannot reach 0.25× of its rate by any change that keeps that cost.
func (r Row) CPURatio() float64 {
	if r.CPUus <= 0 || r.BaseCPUus <= 0 {
		return 0
	}
	return r.CPUus / r.BaseCPUus
}

// perOp is d per operation of the window in microseconds, failed ones
// included (they cost CPU too); 0 when there were none.
func (m Measured) perOp(d time.Duration) float64 {
	ops := m.OK + m.Errors
	if ops <= 0 || d <= 0 {
		return 0
	}
	return float64(d.Microseconds()) / float64(ops)
}

// rowOf turns a measurement into a row against a baseline (base may be
// nil: a baseline row itself).
func rowOf(scenario, store string, clients int, m Measured, baseName string, base *Measured) Row {
	r := Row{Scenario: scenario, Store: store, Clients: clients, Rate: m.Rate(), Errors: m.Errors}
	if m.Lat != nil {
		r.P50ms, r.P99ms = ms(m.Lat.Quantile(0.5)), ms(m.Lat.Quantile(0.99))
	}
	if m.CPU.Cores > 0 {
		r.Busy, r.Steal, r.Cores = m.CPU.Busy(), m.CPU.StealShare(), m.CPU.Cores
		r.CPUus, r.PlatformCPUus, r.LoadCPUus = m.perOp(m.CPU.Machine), m.perOp(m.CPU.Platform), m.perOp(m.CPU.Load)
	}
	if base != nil {
		r.Baseline, r.BaseRate = baseName, base.Rate()
		if r.BaseRate > 0 {
			r.Ratio = r.Rate / r.BaseRate
		}
		r.BaseCPUus = base.perOp(base.CPU.Machine)
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

// stealWorthNoting is the share of stolen time above which a row says so:
// the machine then had fewer cores than the ceiling assumes.
const stealWorthNoting = 0.02

// writeTable prints the rows as one aligned table: rate, p50, p99, the
// baseline named and its rate, the ratio, errors, then the window's CPU
// (see Row); notes follow the table.
func writeTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tstore\tclients\trate/s\tp50 ms\tp99 ms\terrors\tbaseline\tbaseline/s\tratio\tbusy\tcpu µs/op\tplatform µs/op\tceiling/s\tcpu ÷ base\t")
	for _, r := range rows {
		ratio, baseRate, base := "-", "-", "-"
		if r.Baseline != "" {
			base, baseRate, ratio = r.Baseline, fmt.Sprintf("%.0f", r.BaseRate), fmt.Sprintf("%.2f×", r.Ratio)
		}
		busy, cpu, platform, ceiling, cpuRatio := "-", "-", "-", "-", "-"
		if r.CPUus > 0 {
			busy, cpu, ceiling = fmt.Sprintf("%.0f%%", 100*r.Busy), fmt.Sprintf("%.0f", r.CPUus), fmt.Sprintf("%.0f", r.Ceiling())
		}
		if r.PlatformCPUus > 0 {
			platform = fmt.Sprintf("%.0f", r.PlatformCPUus)
		}
		if c := r.CPURatio(); c > 0 {
			cpuRatio = fmt.Sprintf("%.2f×", c)
		}
		// A row whose figure is in its note (a restart's time, resident
		// memory) or that times no calls (a drain) shows "-" rather
		// than a rate or a latency of zero that nothing measured.
		rate, p50, p99 := "-", "-", "-"
		if r.Rate > 0 || r.Errors > 0 {
			rate = fmt.Sprintf("%.0f", r.Rate)
		}
		if r.P50ms > 0 || r.P99ms > 0 {
			p50, p99 = fmt.Sprintf("%.2f", r.P50ms), fmt.Sprintf("%.2f", r.P99ms)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			r.Scenario, r.Store, r.Clients, rate, p50, p99, r.Errors, base, baseRate, ratio, busy, cpu, platform, ceiling, cpuRatio)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	for _, r := range rows {
		if r.Note != "" {
			fmt.Fprintf(w, "note: %s (%s): %s\n", r.Scenario, r.Store, r.Note)
		}
		if r.Steal >= stealWorthNoting {
			fmt.Fprintf(w, "note: %s (%s): the hypervisor took %.0f%% of the cores' time in the window (not in busy or cpu µs/op)\n",
				r.Scenario, r.Store, 100*r.Steal)
		}
	}
	return nil
}

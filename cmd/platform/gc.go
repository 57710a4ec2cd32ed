package main

import "runtime/debug"

// defaultGCPercent is the collector's target when the operator set neither
// GOGC nor GOMEMLIMIT. A write allocates ~60–110 kB of short-lived garbage
// (request, decode, seal, append, every follower's decode), so at Go's
// default of 100 the collector's mark work is a large share of a write's
// CPU; 200 halves how often it runs at the price of a peak heap of up to
// three times the live heap instead of two (measured with scripts/bench.sh on the
// embedded register and member upsert rows).
const defaultGCPercent = 200

// setDefaultGC applies defaultGCPercent unless the operator chose the
// collector's settings (GOGC or GOMEMLIMIT set, even to Go's defaults), so
// an explicit choice always wins. It reports the target now in force and
// whether it was this default.
func setDefaultGC(getenv func(string) string) (percent int, applied bool) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		prev := debug.SetGCPercent(100)
		debug.SetGCPercent(prev)
		return prev, false
	}
	debug.SetGCPercent(defaultGCPercent)
	return defaultGCPercent, true
}

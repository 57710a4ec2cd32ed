package healthdata

import (
	"math"
	"strconv"
	"strings"
)

// Thresholds follow common clinical reference ranges for adults: a resting
// heart rate of 60–100 bpm is usual, and a pulse-oximetry SpO2 of 95% or
// above is normal, 90–94% slightly low and below 90% low (hypoxaemia). The
// plausibility bounds only discard values no living person produces
// (measurement errors), they are not clinical ranges.
const (
	// HeartRateLow (bpm) is where a resting heart rate starts to read as low (bradycardia).
	HeartRateLow = 60.0
	// HeartRateHigh (bpm) is where a resting heart rate starts to read as high (tachycardia).
	HeartRateHigh = 100.0
	// SpO2Normal (%) is the lowest blood oxygen read as normal.
	SpO2Normal = 95.0
	// SpO2Low (%) separates slightly low blood oxygen (re-measure) from low (seek advice).
	SpO2Low = 90.0
	// HeartRateMin (bpm) rejects lower values as sensor errors, not as bradycardia.
	HeartRateMin = 20.0
	// HeartRateMax (bpm) rejects higher values as sensor errors.
	HeartRateMax = 300.0
	// SpO2Min (%) rejects lower values as sensor errors (poor probe contact).
	SpO2Min = 50.0
	// SpO2Max (%) rejects higher values, which cannot be a saturation.
	SpO2Max = 100.0
)

// Disclaimer closes every Insight so readers know no clinician or AI model wrote it.
const Disclaimer = "This summary is generated from the measured values by fixed rules, not by a medical professional or an AI model."

// Daily is the data of GET /v1/health/daily-report, shaped as the spec names it.
type Daily struct {
	Date      string `json:"date"`
	HeartRate *Avg   `json:"heartRate"`
	SpO2      *Avg   `json:"spo2"`
	Insight   string `json:"aiInsight"`
}

// Avg is one indicator's day average; Count stays off the wire because the spec shape is {avg, unit}.
type Avg struct {
	Avg   float64 `json:"avg"`
	Unit  string  `json:"unit"`
	Count int     `json:"-"`
}

// Summarize builds the daily report by fixed rules so it is reproducible; per raw_data (one measurement) vendor-report values win over sibling indicators to avoid double counting.
func Summarize(date string, raws [][]byte) Daily {
	var hr, spo2 []float64
	for _, raw := range raws {
		sibling, vendor := readingsBySource(raw)
		hr = append(hr, prefer(vendor, sibling, heartRateValue)...)
		spo2 = append(spo2, prefer(vendor, sibling, spo2Value)...)
	}
	d := Daily{Date: date, HeartRate: average(hr, "bpm"), SpO2: average(spo2, "%")}
	d.Insight = insight(date, d.HeartRate, d.SpO2)
	return d
}

// prefer returns the accepted values from first, or from second when first has none.
func prefer(first, second []Reading, accept func(Reading) (float64, bool)) []float64 {
	if vs := accepted(first, accept); len(vs) > 0 {
		return vs
	}
	return accepted(second, accept)
}

func accepted(rs []Reading, accept func(Reading) (float64, bool)) []float64 {
	var out []float64
	for _, r := range rs {
		if v, ok := accept(r); ok {
			out = append(out, v)
		}
	}
	return out
}

// heartRateValue accepts a heart-rate reading in a per-minute unit (or with
// no unit, which the code already implies) and within plausibility bounds.
func heartRateValue(r Reading) (float64, bool) {
	if !heartRateCodes[normCode(r.Code)] {
		return 0, false
	}
	switch strings.ToLower(strings.TrimSpace(r.Unit)) {
	case "", "bpm", "次/分", "/min":
	default:
		return 0, false
	}
	if r.Value < HeartRateMin || r.Value > HeartRateMax {
		return 0, false
	}
	return r.Value, true
}

// spo2Value accepts an SpO2 reading in percent (or with no unit) and within plausibility bounds.
func spo2Value(r Reading) (float64, bool) {
	if !spo2Codes[normCode(r.Code)] {
		return 0, false
	}
	switch strings.TrimSpace(r.Unit) {
	case "", "%", "％":
	default:
		return 0, false
	}
	if r.Value < SpO2Min || r.Value > SpO2Max {
		return 0, false
	}
	return r.Value, true
}

// average returns nil for no values, so the report can tell "not measured" from zero.
func average(vs []float64, unit string) *Avg {
	if len(vs) == 0 {
		return nil
	}
	var sum float64
	for _, v := range vs {
		sum += v
	}
	return &Avg{Avg: round1(sum / float64(len(vs))), Unit: unit, Count: len(vs)}
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// insight classifies the rounded averages, so the words always agree with the numbers shown.
func insight(date string, hr, spo2 *Avg) string {
	on := "on " + date
	if date == "" {
		on = "on this day"
	}
	var parts []string
	if hr == nil && spo2 == nil {
		parts = append(parts, "No heart-rate or blood-oxygen readings were recorded "+on+".")
	} else {
		if hr != nil {
			readings := "readings"
			if hr.Count == 1 {
				readings = "reading"
			}
			s := "Average heart rate " + num(hr.Avg) + " bpm from " + strconv.Itoa(hr.Count) + " " + readings + ", "
			switch {
			case hr.Avg < HeartRateLow:
				s += "below"
			case hr.Avg > HeartRateHigh:
				s += "above"
			default:
				s += "within"
			}
			s += " the usual resting range (" + num(HeartRateLow) + "–" + num(HeartRateHigh) + " bpm)."
			parts = append(parts, s)
		} else {
			parts = append(parts, "No heart-rate readings were recorded "+on+".")
		}
		if spo2 != nil {
			s := "Average blood oxygen " + num(spo2.Avg) + "%, "
			switch {
			case spo2.Avg >= SpO2Normal:
				s += "normal (" + num(SpO2Normal) + "% or above)."
			case spo2.Avg >= SpO2Low:
				s += "slightly low (" + num(SpO2Low) + "–" + num(SpO2Normal-1) + "%); consider re-measuring at rest."
			default:
				s += "low (below " + num(SpO2Low) + "%); consider seeking medical advice."
			}
			parts = append(parts, s)
		} else {
			parts = append(parts, "No blood-oxygen readings were recorded "+on+".")
		}
	}
	parts = append(parts, Disclaimer)
	return strings.Join(parts, " ")
}

package commands

import (
	"encoding/json"
	"math"
	"time"

	"github.com/healthtech/partner-open-platform/events/catalog"
)

// analyze is the algorithm step of ECG and body-composition measurements.
// It derives numbers from the device data with published formulas; vendors'
// proprietary algorithms would replace it behind the same event.
func analyze(s *catalog.PluginSessionOpened, m *catalog.PluginMeasurementRecorded, now time.Time) map[string]any {
	var data map[string]any
	_ = json.Unmarshal([]byte(m.Data), &data)
	switch m.ReportType {
	case "ecg":
		return analyzeECG(data)
	default:
		return analyzeBCA(s, data, now)
	}
}

// analyzeECG computes heart rate and beat-to-beat variability from RR
// intervals: mean HR = 60000 / mean RR (ms); SDNN is the standard deviation
// of the intervals; a coefficient of variation above 0.15 flags an
// irregular rhythm for review.
func analyzeECG(data map[string]any) map[string]any {
	var rr []float64
	if list, ok := data["rr_intervals_ms"].([]any); ok {
		for _, v := range list {
			if f, ok := v.(float64); ok && f >= 200 && f <= 3000 {
				rr = append(rr, f)
			}
		}
	}
	if len(rr) < 2 {
		return map[string]any{"status": "insufficient_data", "method": "rr-intervals", "reason": "fewer than 2 usable RR intervals (200-3000 ms)"}
	}
	mean := 0.0
	for _, v := range rr {
		mean += v
	}
	mean /= float64(len(rr))
	variance := 0.0
	for _, v := range rr {
		variance += (v - mean) * (v - mean)
	}
	sdnn := math.Sqrt(variance / float64(len(rr)-1))
	rhythm := "regular"
	if sdnn/mean > 0.15 {
		rhythm = "irregular"
	}
	return map[string]any{
		"status": "ok", "method": "rr-intervals", "beats": len(rr) + 1,
		"heart_rate_bpm": round1(60000 / mean), "sdnn_ms": round1(sdnn), "rhythm": rhythm,
	}
}

// analyzeBCA computes BMI (kg/m²) and body-fat percentage with the
// Deurenberg (1991) formula 1.2·BMI + 0.23·age − 10.8·sex − 5.4 (sex 1 for
// male, 0 for female), from the scale's weight and the profile's height,
// gender and birth date that the launch had to carry.
func analyzeBCA(s *catalog.PluginSessionOpened, data map[string]any, now time.Time) map[string]any {
	weight, _ := data["weight"].(float64)
	if weight <= 0 && s.Weight > 0 {
		weight = float64(s.Weight) / 100
	}
	birth, err := time.Parse(time.DateOnly, s.BirthDate)
	if weight <= 0 || s.Height <= 0 || err != nil {
		return map[string]any{"status": "insufficient_data", "method": "deurenberg-1991", "reason": "weight, height and birth_date are required"}
	}
	h := float64(s.Height) / 100
	bmi := weight / (h * h)
	age := now.Year() - birth.Year()
	if now.YearDay() < birth.YearDay() {
		age--
	}
	sex := 0.0
	if s.Gender == "male" {
		sex = 1
	}
	fat := 1.2*bmi + 0.23*float64(age) - 10.8*sex - 5.4
	return map[string]any{
		"status": "ok", "method": "deurenberg-1991", "weight_kg": round1(weight), "height_cm": s.Height, "age": age,
		"bmi": round1(bmi), "body_fat_percent": round1(math.Max(fat, 0)),
	}
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

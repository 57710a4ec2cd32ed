package healthdata

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// flat builds a raw_data with one flat indicator.
func flat(code string, value any, unit string) []byte {
	return fmt.Appendf(nil, `{"indicators":[{"code":%q,"value":%v,"unit":%q}]}`, code, value, unit)
}

func TestSummarizeExample(t *testing.T) {
	d := Summarize("2026-05-01", [][]byte{
		flat("heart_rate", 70, "bpm"),
		flat("hr", 72, "次/分"),
		[]byte(`{"indicators":[{"indicator_code":"blood_pressure","values":[
			{"key":"systolic","value":118,"unit":"mmHg"},{"key":"pulse","value":74,"unit":"/min"}]}]}`),
		flat("spo2", 97, "%"),
		flat("blood_oxygen", 98, "%"),
	})
	want := "Average heart rate 72 bpm from 3 readings, within the usual resting range (60–100 bpm). " +
		"Average blood oxygen 97.5%, normal (95% or above). " + Disclaimer
	if d.Insight != want {
		t.Fatalf("Insight\n got %q\nwant %q", d.Insight, want)
	}
	if d.Date != "2026-05-01" || *d.HeartRate != (Avg{72, "bpm", 3}) || *d.SpO2 != (Avg{97.5, "%", 2}) {
		t.Fatalf("unexpected summary %+v %+v %+v", d, *d.HeartRate, *d.SpO2)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"date":"2026-05-01","heartRate":{"avg":72,"unit":"bpm"},"spo2":{"avg":97.5,"unit":"%"},"aiInsight":` +
		string(mustJSON(t, want)) + `}`
	if string(b) != wantJSON {
		t.Fatalf("JSON\n got %s\nwant %s", b, wantJSON)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSummarizeEmptyDay(t *testing.T) {
	for _, raws := range [][][]byte{
		nil,
		{},
		{nil, []byte(`{}`), []byte(`not json`), flat("temp", 36.6, "℃"), flat("hr", 10, "bpm")},
	} {
		d := Summarize("2026-05-02", raws)
		if d.HeartRate != nil || d.SpO2 != nil {
			t.Fatalf("expected no averages, got %+v", d)
		}
		want := "No heart-rate or blood-oxygen readings were recorded on 2026-05-02. " + Disclaimer
		if d.Insight != want {
			t.Fatalf("Insight %q, want %q", d.Insight, want)
		}
		b := mustJSON(t, d)
		if !strings.Contains(string(b), `"heartRate":null,"spo2":null`) {
			t.Fatalf("JSON %s", b)
		}
	}
	if d := Summarize("", nil); d.Insight != "No heart-rate or blood-oxygen readings were recorded on this day. "+Disclaimer {
		t.Fatalf("empty date: %q", d.Insight)
	}
}

func TestSummarizeOnlyOneIndicator(t *testing.T) {
	d := Summarize("2026-05-03", [][]byte{flat("pulse", 80, "bpm")})
	want := "Average heart rate 80 bpm from 1 reading, within the usual resting range (60–100 bpm). " +
		"No blood-oxygen readings were recorded on 2026-05-03. " + Disclaimer
	if d.Insight != want || d.SpO2 != nil {
		t.Fatalf("got %q", d.Insight)
	}
	d = Summarize("2026-05-03", [][]byte{flat("SaO2", 96, "%")})
	want = "No heart-rate readings were recorded on 2026-05-03. Average blood oxygen 96%, normal (95% or above). " + Disclaimer
	if d.Insight != want || d.HeartRate != nil {
		t.Fatalf("got %q", d.Insight)
	}
}

func TestSummarizeCodeVariants(t *testing.T) {
	hr := []string{"heart_rate", "heartrate", "HeartRate", "HEART-RATE", "hr", "HR", "pulse", "pulse_rate", "Pulse-Rate", "bpm", "BPM"}
	for _, code := range hr {
		d := Summarize("d", [][]byte{flat(code, 65, "bpm")})
		if d.HeartRate == nil || d.HeartRate.Avg != 65 || d.SpO2 != nil {
			t.Errorf("code %q not read as heart rate: %+v", code, d)
		}
	}
	spo2 := []string{"spo2", "SpO2", "SPO2", "blood_oxygen", "Blood-Oxygen", "oxygen_saturation", "OxygenSaturation", "sao2", "SaO2"}
	for _, code := range spo2 {
		d := Summarize("d", [][]byte{flat(code, 96, "%")})
		if d.SpO2 == nil || d.SpO2.Avg != 96 || d.HeartRate != nil {
			t.Errorf("code %q not read as SpO2: %+v", code, d)
		}
	}
	for _, code := range []string{"heart_rate_variability", "hrv", "resting", "bp.pulse", "spo2_min", "o2", "temp"} {
		d := Summarize("d", [][]byte{flat(code, 96, "%"), flat(code, 70, "bpm")})
		if d.HeartRate != nil || d.SpO2 != nil {
			t.Errorf("code %q wrongly recognised: %+v", code, d)
		}
	}
}

func TestSummarizeGroupedKeys(t *testing.T) {
	raw := []byte(`{"indicators":[
		{"indicator_code":"ecg","values":[{"key":"bpm","value":70,"unit":"bpm"},{"key":"qrs","value":90,"unit":"ms"}]},
		{"indicator_code":"ring","values":[{"key":"heart_rate","value":80,"unit":"bpm"},{"key":"blood_oxygen","value":94,"unit":"%"}]},
		{"indicator_code":"heart_rate","values":[{"key":"heart_rate","value":90,"unit":"bpm"}]},
		{"indicator_code":"spo2","values":[{"value":96,"unit":"%"}]}]}`)
	d := Summarize("d", [][]byte{raw})
	if d.HeartRate == nil || *d.HeartRate != (Avg{80, "bpm", 3}) {
		t.Fatalf("heart rate %+v", d.HeartRate)
	}
	if d.SpO2 == nil || *d.SpO2 != (Avg{95, "%", 2}) {
		t.Fatalf("SpO2 %+v", d.SpO2)
	}
}

func TestSummarizeUnits(t *testing.T) {
	tests := []struct {
		code, unit string
		ok         bool
	}{
		{"hr", "bpm", true},
		{"hr", "BPM", true},
		{"hr", " bpm ", true},
		{"hr", "次/分", true},
		{"hr", "/min", true},
		{"hr", "", true},
		{"hr", "次/秒", false},
		{"hr", "Hz", false},
		{"hr", "%", false},
		{"spo2", "%", true},
		{"spo2", "％", true},
		{"spo2", "", true},
		{"spo2", "bpm", false},
		{"spo2", "ratio", false},
	}
	for _, tt := range tests {
		d := Summarize("d", [][]byte{flat(tt.code, 96, tt.unit)})
		a := d.HeartRate
		wantUnit := "bpm"
		if tt.code == "spo2" {
			a, wantUnit = d.SpO2, "%"
		}
		if (a != nil) != tt.ok {
			t.Errorf("%s with unit %q: accepted=%v, want %v", tt.code, tt.unit, a != nil, tt.ok)
			continue
		}
		if a != nil && a.Unit != wantUnit {
			t.Errorf("%s with unit %q: unit %q, want %q", tt.code, tt.unit, a.Unit, wantUnit)
		}
	}
}

func TestSummarizePlausibilityBounds(t *testing.T) {
	tests := []struct {
		code  string
		value float64
		ok    bool
	}{
		{"hr", 19.9, false}, {"hr", 20, true}, {"hr", 300, true}, {"hr", 300.1, false},
		{"hr", 0, false}, {"hr", -70, false},
		{"spo2", 49.9, false}, {"spo2", 50, true}, {"spo2", 100, true}, {"spo2", 100.1, false},
		{"spo2", 0.97, false},
	}
	for _, tt := range tests {
		d := Summarize("d", [][]byte{flat(tt.code, tt.value, "")})
		got := d.HeartRate != nil || d.SpO2 != nil
		if got != tt.ok {
			t.Errorf("%s=%v accepted=%v, want %v", tt.code, tt.value, got, tt.ok)
		}
	}
	// Implausible values do not dilute the average.
	d := Summarize("d", [][]byte{flat("hr", 70, "bpm"), flat("hr", 0, "bpm"), flat("hr", 400, "bpm")})
	if *d.HeartRate != (Avg{70, "bpm", 1}) {
		t.Fatalf("got %+v", *d.HeartRate)
	}
}

func TestSummarizeThresholds(t *testing.T) {
	hr := []struct {
		value float64
		want  string
	}{
		{59, "Average heart rate 59 bpm from 1 reading, below the usual resting range (60–100 bpm)."},
		{59.9, "Average heart rate 59.9 bpm from 1 reading, below the usual resting range (60–100 bpm)."},
		{60, "Average heart rate 60 bpm from 1 reading, within the usual resting range (60–100 bpm)."},
		{100, "Average heart rate 100 bpm from 1 reading, within the usual resting range (60–100 bpm)."},
		{100.1, "Average heart rate 100.1 bpm from 1 reading, above the usual resting range (60–100 bpm)."},
		{150, "Average heart rate 150 bpm from 1 reading, above the usual resting range (60–100 bpm)."},
		{59.96, "Average heart rate 60 bpm from 1 reading, within the usual resting range (60–100 bpm)."},
		{100.04, "Average heart rate 100 bpm from 1 reading, within the usual resting range (60–100 bpm)."},
	}
	for _, tt := range hr {
		d := Summarize("d", [][]byte{flat("heart_rate", tt.value, "bpm")})
		if !strings.HasPrefix(d.Insight, tt.want+" ") {
			t.Errorf("heart rate %v: %q, want prefix %q", tt.value, d.Insight, tt.want)
		}
	}
	spo2 := []struct {
		value float64
		want  string
	}{
		{100, "Average blood oxygen 100%, normal (95% or above)."},
		{95, "Average blood oxygen 95%, normal (95% or above)."},
		{94.96, "Average blood oxygen 95%, normal (95% or above)."},
		{94.9, "Average blood oxygen 94.9%, slightly low (90–94%); consider re-measuring at rest."},
		{94, "Average blood oxygen 94%, slightly low (90–94%); consider re-measuring at rest."},
		{90, "Average blood oxygen 90%, slightly low (90–94%); consider re-measuring at rest."},
		{89.9, "Average blood oxygen 89.9%, low (below 90%); consider seeking medical advice."},
		{80, "Average blood oxygen 80%, low (below 90%); consider seeking medical advice."},
	}
	for _, tt := range spo2 {
		d := Summarize("d", [][]byte{flat("spo2", tt.value, "%")})
		if !strings.Contains(d.Insight, " "+tt.want+" ") {
			t.Errorf("SpO2 %v: %q, want %q", tt.value, d.Insight, tt.want)
		}
		if !strings.HasSuffix(d.Insight, Disclaimer) {
			t.Errorf("missing disclaimer: %q", d.Insight)
		}
	}
}

func TestSummarizeRounding(t *testing.T) {
	tests := []struct {
		values []float64
		want   float64
	}{
		{[]float64{70, 71, 71}, 70.7}, // 70.666…
		{[]float64{70, 70, 71}, 70.3}, // 70.333…
		{[]float64{72.25}, 72.3},      // half rounds away from zero
		{[]float64{72.24}, 72.2},
		{[]float64{60, 61}, 60.5},
		{[]float64{99.99, 100}, 100},
	}
	for _, tt := range tests {
		var raws [][]byte
		for _, v := range tt.values {
			raws = append(raws, flat("hr", v, "bpm"))
		}
		d := Summarize("d", raws)
		if d.HeartRate.Avg != tt.want || d.HeartRate.Count != len(tt.values) {
			t.Errorf("%v: got %+v, want avg %v", tt.values, *d.HeartRate, tt.want)
		}
	}
}

func TestSummarizePrefersVendorWithinMeasurement(t *testing.T) {
	both := []byte(`{"indicators":[{"code":"heart_rate","value":70,"unit":"bpm"},{"code":"spo2","value":97,"unit":"%"}],
		"report":{"raw_data":{"indicators":[{"code":"hr","value":71,"unit":"bpm"}]}}}`)
	d := Summarize("d", [][]byte{both})
	if *d.HeartRate != (Avg{71, "bpm", 1}) {
		t.Fatalf("heart rate should come from the vendor report only: %+v", *d.HeartRate)
	}
	if *d.SpO2 != (Avg{97, "%", 1}) {
		t.Fatalf("SpO2 should fall back to sibling indicators: %+v", *d.SpO2)
	}
	// A vendor value that fails the checks does not hide a valid sibling value.
	bad := []byte(`{"indicators":[{"code":"hr","value":70}],"report":{"raw_data":{"indicators":[{"code":"hr","value":0}]}}}`)
	if d := Summarize("d", [][]byte{bad}); *d.HeartRate != (Avg{70, "bpm", 1}) {
		t.Fatalf("got %+v", *d.HeartRate)
	}
}

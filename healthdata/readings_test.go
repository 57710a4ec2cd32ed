package healthdata

import (
	"math"
	"reflect"
	"testing"
)

func TestReadings(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Reading
	}{
		{
			name: "flat items",
			in: `{"data_source":"station","data_type":"indicators","measured_at":"2026-05-01 08:00:00",
				"indicators":[{"code":"heart_rate","value":72,"unit":"bpm"},{"code":"spo2","value":97.5,"unit":"%"}]}`,
			want: []Reading{{"heart_rate", 72, "bpm"}, {"spo2", 97.5, "%"}},
		},
		{
			name: "grouped items",
			in: `{"indicators":[{"indicator_code":"blood_pressure","values":[
				{"key":"systolic","value":120,"unit":"mmHg"},
				{"key":"diastolic","value":80,"unit":"mmHg"},
				{"key":"pulse","value":70,"unit":"次/分"}]}]}`,
			want: []Reading{
				{"blood_pressure.systolic", 120, "mmHg"},
				{"blood_pressure.diastolic", 80, "mmHg"},
				{"blood_pressure.pulse", 70, "次/分"},
				{"pulse", 70, "次/分"},
			},
		},
		{
			name: "grouped key equal to a known code in another spelling",
			in:   `{"indicators":[{"indicator_code":"vitals","values":[{"key":"Heart-Rate","value":66,"unit":"bpm"},{"key":"SpO2","value":98,"unit":"%"}]}]}`,
			want: []Reading{
				{"vitals.Heart-Rate", 66, "bpm"}, {"Heart-Rate", 66, "bpm"},
				{"vitals.SpO2", 98, "%"}, {"SpO2", 98, "%"},
			},
		},
		{
			name: "grouped without key or group",
			in: `{"indicators":[{"indicator_code":"hr","values":[{"value":61,"unit":"bpm"},{"key":null,"value":62}]},
				{"values":[{"key":"spo2","value":96,"unit":"%"},{"value":1}]}]}`,
			want: []Reading{{"hr", 61, "bpm"}, {"hr", 62, ""}, {"spo2", 96, "%"}},
		},
		{
			name: "mixed shapes in one array",
			in:   `{"indicators":[{"code":"temp","value":36.6,"unit":"℃"},{"indicator_code":"ecg","values":[{"key":"bpm","value":75,"unit":"bpm"}]}]}`,
			want: []Reading{{"temp", 36.6, "℃"}, {"ecg.bpm", 75, "bpm"}, {"bpm", 75, "bpm"}},
		},
		{
			name: "unknown and extra fields tolerated",
			in: `{"new_top":{"x":[1,2]},"indicators":[{"code":"hr","value":70,"unit":"bpm","quality":"good","extra":{"a":[null]}},
				{"indicator_code":"g","future":true,"values":[{"key":"k","value":1,"unit":"u","note":"n"}]}]}`,
			want: []Reading{{"hr", 70, "bpm"}, {"g.k", 1, "u"}},
		},
		{
			name: "missing unit is empty",
			in:   `{"indicators":[{"code":"hr","value":70},{"code":"hr","value":71,"unit":null}]}`,
			want: []Reading{{"hr", 70, ""}, {"hr", 71, ""}},
		},
		{
			name: "wrong types skipped",
			in: `{"indicators":[
				{"code":"hr","value":"72","unit":"bpm"},
				{"code":72,"value":72},
				{"code":"","value":72},
				{"code":"hr","value":true},
				{"code":"hr","value":null},
				{"code":"hr","value":[72]},
				{"code":"hr","value":72,"unit":5},
				{"code":"hr"},
				"hr", 72, null, [],
				{"indicator_code":5,"values":[{"key":"hr","value":72}]},
				{"indicator_code":"g","values":{"key":"hr","value":72}},
				{"indicator_code":"g","values":[1,"x",null,{"key":5,"value":72},{"key":"hr","value":"72"},{"key":"hr","value":72,"unit":{}}]},
				{"code":"ok","value":1,"unit":"u"}]}`,
			want: []Reading{{"ok", 1, "u"}},
		},
		{
			name: "numbers out of float64 range skipped",
			in:   `{"indicators":[{"code":"a","value":1e400},{"code":"b","value":-1e400},{"code":"c","value":12345678901234567890123456789},{"code":"d","value":1e-400}]}`,
			want: []Reading{{"c", 12345678901234567890123456789, ""}, {"d", 0, ""}},
		},
		{
			name: "vendor report indicators",
			in: `{"data_type":"report","report":{"report_type":"X","raw_data":{"indicators":[
				{"code":"spo2","value":95,"unit":"%"},{"indicator_code":"ring","values":[{"key":"hr","value":58,"unit":"bpm"}]}]}}}`,
			want: []Reading{{"spo2", 95, "%"}, {"ring.hr", 58, "bpm"}, {"hr", 58, "bpm"}},
		},
		{
			name: "sibling before vendor",
			in:   `{"indicators":[{"code":"hr","value":70}],"report":{"raw_data":{"indicators":[{"code":"hr","value":71}]}}}`,
			want: []Reading{{"hr", 70, ""}, {"hr", 71, ""}},
		},
		{
			name: "vendor data without indicators array ignored",
			in:   `{"report":{"raw_data":{"heart_rate":72,"indicators":{"code":"hr","value":1},"ecg":{"indicators":[{"code":"hr","value":2}]}}}}`,
			want: nil,
		},
		{name: "wearable free-form raw_data", in: `{"data_source":"wearable","raw_data":{"hr":[70,71]}}`, want: nil},
		{name: "report not an object", in: `{"report":"x","indicators":null}`, want: nil},
		{name: "report raw_data not an object", in: `{"report":{"raw_data":[{"indicators":[]}]}}`, want: nil},
		{name: "top-level array", in: `[{"indicators":[{"code":"hr","value":1}]}]`, want: nil},
		{name: "null", in: `null`, want: nil},
		{name: "empty", in: ``, want: nil},
		{name: "invalid JSON", in: `{"indicators":[{"code":"hr","value":70}`, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Readings([]byte(tt.in))
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Readings()\n got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func FuzzReadings(f *testing.F) {
	for _, s := range []string{
		`{"indicators":[{"code":"heart_rate","value":72,"unit":"bpm"}]}`,
		`{"indicators":[{"indicator_code":"bp","values":[{"key":"pulse","value":70,"unit":"次/分"}]}]}`,
		`{"report":{"raw_data":{"indicators":[{"code":"spo2","value":97,"unit":"%"}]}}}`,
		`{"indicators":[{"code":"hr","value":1e400}]}`,
		`{"indicators":[1,"x",null,{"values":[{}]}]}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, r := range Readings(in) {
			if r.Code == "" || math.IsNaN(r.Value) || math.IsInf(r.Value, 0) {
				t.Fatalf("bad reading %#v from %q", r, in)
			}
		}
		d := Summarize("2026-05-01", [][]byte{in, in})
		for _, a := range []*Avg{d.HeartRate, d.SpO2} {
			if a != nil && (a.Count <= 0 || math.IsNaN(a.Avg)) {
				t.Fatalf("bad average %#v from %q", a, in)
			}
		}
		if d.HeartRate != nil && (d.HeartRate.Avg < HeartRateMin || d.HeartRate.Avg > HeartRateMax) {
			t.Fatalf("heart rate %v outside plausibility bounds", d.HeartRate.Avg)
		}
		if d.SpO2 != nil && (d.SpO2.Avg < SpO2Min || d.SpO2.Avg > SpO2Max) {
			t.Fatalf("SpO2 %v outside plausibility bounds", d.SpO2.Avg)
		}
		if d.Insight == "" {
			t.Fatalf("empty insight")
		}
	})
}

// Readings flattens raw_data.indicators[] and the vendor report's indicators (rule 5) so callers need not branch per device, skipping malformed items rather than failing.
func Readings(raw []byte) []Reading {
	sibling, vendor := readingsBySource(raw)
	return append(sibling, vendor...)
}

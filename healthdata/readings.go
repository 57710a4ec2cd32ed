package healthdata

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// Reading is one numeric indicator value, flattened from either indicators[] shape so callers need not branch on it.
type Reading struct {
	Code  string
	Value float64
	Unit  string
}

// readingsBySource returns the readings of raw_data.indicators[] and of
// raw_data.report.raw_data.indicators[] separately, so the daily summary can
// prefer the vendor report without counting one measurement twice.
func readingsBySource(raw []byte) (sibling, vendor []Reading) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, nil
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, nil
	}
	sibling = indicatorReadings(top)
	if report, ok := top["report"].(map[string]any); ok {
		if vendorRaw, ok := report["raw_data"].(map[string]any); ok {
			vendor = indicatorReadings(vendorRaw)
		}
	}
	return sibling, vendor
}

// indicatorReadings reads obj["indicators"] when it is an array; other types yield nothing.
func indicatorReadings(obj map[string]any) []Reading {
	items, ok := obj["indicators"].([]any)
	if !ok {
		return nil
	}
	var out []Reading
	for _, it := range items {
		item, ok := it.(map[string]any)
		if !ok {
			continue
		}
		out = appendFlat(out, item)
		out = appendGrouped(out, item)
	}
	return out
}

// appendFlat reads the flat shape {code, value, unit}.
func appendFlat(out []Reading, item map[string]any) []Reading {
	code, ok := item["code"].(string)
	if !ok || code == "" {
		return out
	}
	v, ok := number(item["value"])
	if !ok {
		return out
	}
	unit, ok := unitOf(item)
	if !ok {
		return out
	}
	return append(out, Reading{Code: code, Value: v, Unit: unit})
}

// appendGrouped reads the grouped shape {indicator_code, values: [{key, value, unit}]}.
// Each value yields Code indicator_code.key; a key that is itself a known
// indicator code (see isIndicatorCode) also yields a Reading with Code key.
func appendGrouped(out []Reading, item map[string]any) []Reading {
	group, ok := item["indicator_code"].(string)
	if !ok && item["indicator_code"] != nil {
		return out
	}
	values, ok := item["values"].([]any)
	if !ok {
		return out
	}
	for _, e := range values {
		val, ok := e.(map[string]any)
		if !ok {
			continue
		}
		key, keyOK := val["key"].(string)
		if val["key"] != nil && !keyOK {
			continue
		}
		v, ok := number(val["value"])
		if !ok {
			continue
		}
		unit, ok := unitOf(val)
		if !ok {
			continue
		}
		var code string
		switch {
		case group != "" && key != "":
			code = group + "." + key
		case group != "":
			code = group
		case key != "":
			code = key
		default:
			continue
		}
		out = append(out, Reading{Code: code, Value: v, Unit: unit})
		if code != key && key != "" && isIndicatorCode(key) {
			out = append(out, Reading{Code: key, Value: v, Unit: unit})
		}
	}
	return out
}

// number accepts only JSON numbers that fit a finite float64.
func number(x any) (float64, bool) {
	n, ok := x.(json.Number)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

// unitOf returns the unit, "" when absent or null; a unit of another type
// makes the value untrustworthy, so ok is false.
func unitOf(m map[string]any) (string, bool) {
	switch u := m["unit"].(type) {
	case nil:
		return "", true
	case string:
		return u, true
	default:
		return "", false
	}
}

// normCode folds case and drops '_', '-' and spaces so spelling variants of
// one indicator compare equal.
func normCode(code string) string {
	var b strings.Builder
	b.Grow(len(code))
	for _, r := range strings.ToLower(code) {
		switch r {
		case '_', '-', ' ', '\t':
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// heartRateCodes and spo2Codes are the normalised (normCode) indicator codes
// the daily summary recognises.
var (
	heartRateCodes = map[string]bool{
		"heartrate": true, "hr": true, "pulse": true, "pulserate": true, "bpm": true,
	}
	spo2Codes = map[string]bool{
		"spo2": true, "bloodoxygen": true, "oxygensaturation": true, "sao2": true,
	}
)

// isIndicatorCode reports whether code names an indicator this package knows.
func isIndicatorCode(code string) bool {
	n := normCode(code)
	return heartRateCodes[n] || spo2Codes[n]
}

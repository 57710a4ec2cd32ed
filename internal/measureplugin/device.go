package measureplugin

import (
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Device keys the spec lists; the plugin refuses any other.
const (
	DeviceMultiBioMonitor = "HOME_MULTI_BIO_MONITOR"
	DeviceSpO2Ring        = "HOME_SPO2_RING"
	DeviceECGRecorder     = "HEARTLOG_ECG_RECORDER"
	DeviceBodyComposition = "BODY_COMPOSITION_ANALYSIS"
)

// Measure modes this package accepts; the spec shows only BP, the rest are our documented choice.
const (
	ModeBloodPressure   = "BP"
	ModeBloodGlucose    = "BG"
	ModeSpO2            = "SPO2"
	ModeECG             = "ECG"
	ModeBodyComposition = "BCA"
)

// Report types of plugin.report.ready, so hosts can match a webhook to the launch that caused it.
const (
	ReportBloodPressure   = "blood_pressure"
	ReportBloodGlucose    = "blood_glucose"
	ReportSpO2            = "spo2"
	ReportECG             = "ecg"
	ReportBodyComposition = "bca"
)

// DeviceKeys lists the spec's devices in its order, for host UIs and input validation.
var DeviceKeys = []string{DeviceMultiBioMonitor, DeviceSpO2Ring, DeviceECGRecorder, DeviceBodyComposition}

// modes maps each device to its accepted measureMode values and the report_type each produces.
var modes = map[string]map[string]string{
	DeviceMultiBioMonitor: {ModeBloodPressure: ReportBloodPressure, ModeBloodGlucose: ReportBloodGlucose},
	DeviceSpO2Ring:        {ModeSpO2: ReportSpO2},
	DeviceECGRecorder:     {ModeECG: ReportECG},
	DeviceBodyComposition: {ModeBodyComposition: ReportBodyComposition},
}

// FieldError names the offending field (spec JSON spelling) so hosts can map it to a VALIDATION_ERROR-style errors list.
type FieldError struct {
	Field  string
	Reason string
}

// Error renders "field: reason" so logs stay greppable by field name.
func (e FieldError) Error() string { return "plugin: " + e.Field + ": " + e.Reason }

// ReportType refuses unknown device/mode pairs before launch and tells the host which report_type its webhook will carry.
func ReportType(deviceKey, measureMode string) (string, error) {
	m, ok := modes[deviceKey]
	if !ok {
		if deviceKey == "" {
			return "", FieldError{"deviceKey", "required"}
		}
		// The reason names the accepted values, never the rejected one: it
		// reaches error bodies and logs, which carry no partner-sent text.
		return "", FieldError{"deviceKey", "unknown device; must be one of " + strings.Join(slices.Sorted(maps.Keys(modes)), ", ")}
	}
	rt, ok := m[measureMode]
	if !ok {
		if measureMode == "" {
			return "", FieldError{"measureMode", "required"}
		}
		return "", FieldError{"measureMode", "is not a mode of " + deviceKey + "; must be one of " + strings.Join(slices.Sorted(maps.Keys(m)), ", ")}
	}
	return rt, nil
}

var phonePattern = regexp.MustCompile(`^1[3-9][0-9]{9}$`)

// earliestBirth keeps obviously mistyped years (0001, 1899) out of body-composition algorithms.
var earliestBirth = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)

// Validate catches profile mistakes on the host before the user opens the plugin; it reports every bad field, joined.
func (p Profile) Validate(deviceKey string) error {
	return p.validateAt(deviceKey, time.Now())
}

func (p Profile) validateAt(deviceKey string, now time.Time) error {
	var errs []error
	bad := func(field, reason string) { errs = append(errs, FieldError{field, reason}) }

	if deviceKey == DeviceBodyComposition {
		if p.Height == 0 {
			bad("height", "required for "+DeviceBodyComposition)
		}
		if p.Gender == "" {
			bad("gender", "required for "+DeviceBodyComposition)
		}
		if p.BirthDate == "" {
			bad("birth_date", "required for "+DeviceBodyComposition)
		}
	}
	if p.Phone != "" && !phonePattern.MatchString(p.Phone) {
		bad("phone", "must be an 11-digit mainland mobile number")
	}
	switch p.Gender {
	case "", "male", "female", "unknown":
	default:
		bad("gender", "must be male, female or unknown")
	}
	if p.BirthDate != "" {
		d, err := time.Parse(time.DateOnly, p.BirthDate)
		today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		switch {
		case err != nil:
			bad("birth_date", "must be a Y-m-d date")
		case d.After(today):
			bad("birth_date", "must not be in the future")
		case d.Before(earliestBirth):
			bad("birth_date", "must not be before 1900-01-01")
		}
	}
	if p.Height != 0 && (p.Height < 30 || p.Height > 300) {
		bad("height", "must be 30..300 cm")
	}
	if p.Weight != 0 && (p.Weight < 100 || p.Weight > 50000) {
		bad("weight", "must be 100..50000 (kg × 100)")
	}
	if !utf8.ValidString(p.Name) {
		bad("name", "must be valid UTF-8")
	}
	if !utf8.ValidString(p.Metadata) {
		bad("metadata", "must be valid UTF-8")
	}
	return errors.Join(errs...)
}

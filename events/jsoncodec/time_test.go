package jsoncodec

import (
	"testing"
	"time"
)

// sameAsUnmarshalJSON checks that UnmarshalTime gives lit exactly the
// value and the verdict of time.Time's UnmarshalJSON.
func sameAsUnmarshalJSON(t *testing.T, lit string) {
	t.Helper()
	var want, got time.Time
	wantErr := want.UnmarshalJSON([]byte(lit))
	gotErr := UnmarshalTime(&got, []byte(lit))
	gotZone, gotOffset := got.Zone()
	wantZone, wantOffset := want.Zone()
	// A fixed zone (an offset not the local one) is a new Location per
	// parse: equal by its name and offset, any other by identity.
	sameLoc := got.Location() == want.Location() || gotZone == "" && wantZone == ""
	if (gotErr == nil) != (wantErr == nil) || !got.Equal(want) || gotZone != wantZone || gotOffset != wantOffset || !sameLoc {
		t.Fatalf("%s: UnmarshalTime gave %v (%v), UnmarshalJSON %v (%v)", lit, got, gotErr, want, wantErr)
	}
}

func TestUnmarshalTimeIsUnmarshalJSON(t *testing.T) {
	for _, lit := range []string{
		`"2026-12-01T06:30:45Z"`,
		`"2026-12-01T06:30:45.1Z"`,
		`"2026-12-01T06:30:45.123456789Z"`,
		`"2026-12-01T06:30:45.1234567891Z"`, // a tenth digit: UnmarshalJSON's own
		`"2026-12-01T06:30:45.000000000Z"`,
		`"2024-02-29T00:00:00Z"`, // leap years
		`"2000-02-29T00:00:00Z"`,
		`"1900-02-29T00:00:00Z"`, // not leap years
		`"2026-02-29T00:00:00Z"`,
		`"2026-04-31T00:00:00Z"`,
		`"2026-12-31T23:59:59Z"`,
		`"0000-01-01T00:00:00Z"`,
		`"9999-12-31T23:59:59.999999999Z"`,
		`"2026-00-01T00:00:00Z"`,
		`"2026-13-01T00:00:00Z"`,
		`"2026-12-00T00:00:00Z"`,
		`"2026-12-01T24:00:00Z"`,
		`"2026-12-01T23:60:00Z"`,
		`"2026-12-01T23:59:60Z"`,
		`"2026-12-01T06:30:45.Z"`,
		`"2026-12-01T06:30:45,5Z"`,
		`"2026-12-01T06:30:45.5"`,
		`"2026-12-01T06:30:45+08:00"`,
		`"0000-01-01T0:00:00+00:10"`,
		`"2026-12-01T06:30:45.5-00:00"`,
		`"2026-12-01t06:30:45Z"`,
		`"2026-12-01T06:30:45z"`,
		`"2026-1-01T06:30:45Z"`,
		`"+026-12-01T06:30:45Z"`,
		`"2026-12-01T6:30:45Z"`,
		`"2026-12-01T06:30:4aZ"`,
		`"2026-12-01T06:30:45.1a2Z"`,
		`2026-12-01T06:30:45Z`,
		`null`,
		`""`,
		`"Z"`,
	} {
		sameAsUnmarshalJSON(t, lit)
	}
}

func FuzzUnmarshalTime(f *testing.F) {
	for _, lit := range []string{`"2026-12-01T06:30:45Z"`, `"2024-02-29T00:00:00.5Z"`, `"2026-12-01T06:30:45+08:00"`, `null`} {
		f.Add(lit)
	}
	f.Fuzz(sameAsUnmarshalJSON)
}

// The days counted from 1970 agree with time.Date's over the four-digit
// years: every day around the turns of centuries and eras and at the
// ends of the range, and the first and last day of every month of every
// year.
func TestUnmarshalTimeCountsDaysAsTimeDate(t *testing.T) {
	lit := func(y, m, d int) string {
		return time.Date(y, time.Month(m), d, 23, 59, 59, 5, time.UTC).Format(`"2006-01-02T15:04:05.999999999Z"`)
	}
	for _, from := range []int{0, 396, 1600, 1896, 1968, 1999, 2096, 9996} {
		for day := time.Date(from, 1, 1, 0, 0, 0, 0, time.UTC); day.Year() < from+5 && day.Year() <= 9999; day = day.AddDate(0, 0, 1) {
			sameAsUnmarshalJSON(t, lit(day.Year(), int(day.Month()), day.Day()))
		}
	}
	for y := 0; y <= 9999; y++ {
		for m := 1; m <= 12; m++ {
			sameAsUnmarshalJSON(t, lit(y, m, 1))
			sameAsUnmarshalJSON(t, lit(y, m, daysIn(m, y)))
		}
	}
}

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

package jsoncodec

import "time"

// UnmarshalTime is dst.UnmarshalJSON(lit): every event carries a time or
// two, and time.Time's parser spends most of its work on what the form
// its own MarshalJSON writes in UTC never holds (offsets, a local zone,
// leniency after a strict refusal). That form, "YYYY-MM-DDTHH:MM:SSZ" with
// 0 to 9 digits of a second's fraction, is read here to the value
// UnmarshalJSON gives it (time.Date in UTC); anything else goes to
// UnmarshalJSON.
func UnmarshalTime(dst *time.Time, lit []byte) error {
	if t, ok := utcTime(lit); ok {
		*dst = t
		return nil
	}
	return dst.UnmarshalJSON(lit)
}

// utcTime reads the quoted literal lit if it is in UnmarshalTime's form,
// with every field in range.
func utcTime(lit []byte) (time.Time, bool) {
	n := len(lit)
	if n < len(`"2006-01-02T15:04:05Z"`) || lit[0] != '"' || lit[n-1] != '"' || lit[n-2] != 'Z' {
		return time.Time{}, false
	}
	s := lit[1 : n-2] // without the quotes and the Z
	if s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	ok := true
	num := func(b []byte, hi int) int {
		x := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				ok = false
			}
			x = x*10 + int(c-'0')
		}
		if x > hi {
			ok = false
		}
		return x
	}
	year := num(s[0:4], 9999)
	month := num(s[5:7], 12)
	day := num(s[8:10], 31)
	hour := num(s[11:13], 23)
	minute := num(s[14:16], 59)
	sec := num(s[17:19], 59)
	if !ok || month == 0 || day == 0 || day > daysIn(month, year) {
		return time.Time{}, false
	}
	nsec := 0
	if frac := s[19:]; len(frac) > 0 {
		digits := len(frac) - 1
		if frac[0] != '.' || digits < 1 || digits > 9 {
			return time.Time{}, false
		}
		nsec = num(frac[1:], 999999999)
		for range 9 - digits {
			nsec *= 10
		}
		if !ok {
			return time.Time{}, false
		}
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

// daysIn is the number of days of month (1-12) in year.
func daysIn(month, year int) int {
	switch {
	case month == 2 && year%4 == 0 && (year%100 != 0 || year%400 == 0):
		return 29
	case month == 2:
		return 28
	case month == 4 || month == 6 || month == 9 || month == 11:
		return 30
	}
	return 31
}

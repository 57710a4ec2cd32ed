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
// with every field in range. Its value is time.Date's in UTC, made from
// the seconds since 1970 (civil days counted as in the proleptic
// Gregorian calendar, as time.Date counts them).
func utcTime(lit []byte) (time.Time, bool) {
	n := len(lit)
	if n < len(`"2006-01-02T15:04:05Z"`) || lit[0] != '"' || lit[n-1] != '"' || lit[n-2] != 'Z' {
		return time.Time{}, false
	}
	s := lit[1 : n-2] // without the quotes and the Z
	if s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	century, year, month, day := digits2(s, 0), digits2(s, 2), digits2(s, 5), digits2(s, 8)
	hour, minute, sec := digits2(s, 11), digits2(s, 14), digits2(s, 17)
	if century < 0 || year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 ||
		minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	year += century * 100
	if day > daysIn(month, year) {
		return time.Time{}, false
	}
	nsec := 0
	if frac := s[19:]; len(frac) > 0 {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return time.Time{}, false
		}
		for _, c := range frac[1:] {
			if c-'0' > 9 {
				return time.Time{}, false
			}
			nsec = nsec*10 + int(c-'0')
		}
		for range 10 - len(frac) {
			nsec *= 10
		}
	}
	unix := civilDays(year, month, day)*86400 + int64(hour*3600+minute*60+sec)
	return time.Unix(unix, int64(nsec)).UTC(), true
}

// digits2 is the number of the two decimal digits at s[i:], -1 if either
// is none.
func digits2(s []byte, i int) int {
	a, b := s[i]-'0', s[i+1]-'0'
	if a > 9 || b > 9 {
		return -1
	}
	return int(a)*10 + int(b)
}

// civilDays is the number of days from 1970-01-01 to the date (month
// 1-12, day in range), negative before it: eras of 400 years (146,097
// days) from March of year 0, so that a leap day ends its year.
func civilDays(year, month, day int) int64 {
	if month <= 2 {
		year--
	}
	era := year / 400
	if year < 0 {
		era = (year - 399) / 400
	}
	yoe := year - era*400 // 0-399
	m := month + 9        // March 0 ... February 11
	if month > 2 {
		m = month - 3
	}
	doy := (153*m+2)/5 + day - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era*146097+doe) - 719468
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

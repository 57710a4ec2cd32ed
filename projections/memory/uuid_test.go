package memory

import (
	"encoding/hex"
	"strings"
	"testing"
)

// refParseUUID is parseUUID through encoding/hex: the canonical text's
// shape checked byte by byte, its digits decoded by hex.DecodeString.
func refParseUUID(s string) (uuid16, bool) {
	var u uuid16
	if len(s) != 36 {
		return u, false
	}
	for i := range len(s) {
		switch c := s[i]; i {
		case 8, 13, 18, 23:
			if c != '-' {
				return u, false
			}
		default:
			if !strings.ContainsRune("0123456789abcdef", rune(c)) {
				return u, false
			}
		}
	}
	b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil {
		return u, false
	}
	return uuid16(b), true
}

func parseSame(t *testing.T, s string) {
	t.Helper()
	u, ok := parseUUID(s)
	w, wok := refParseUUID(s)
	if u != w || ok != wok {
		t.Fatalf("parseUUID(%q) = %x, %v; through encoding/hex %x, %v", s, u, ok, w, wok)
	}
}

// Every byte value at every position of a canonical uuid, every pair of
// bytes side by side at three places, and every digit in every place:
// parseUUID reads what encoding/hex reads and refuses the rest (upper
// case, the bytes next to each range's ends, bytes above 0x7f next to
// valid ones, hyphens out of place).
func TestParseUUIDAgreesWithEncodingHex(t *testing.T) {
	const canonical = "0b5e4c52-8a0e-5d3c-9f6e-1c2d3e4f5a6b"
	for i := range len(canonical) {
		for c := range 256 {
			s := []byte(canonical)
			s[i] = byte(c)
			parseSame(t, string(s))
		}
	}
	// Every pair of bytes side by side, at the ends and inside a run of
	// eight digits: a byte's carry into its neighbour decides nothing.
	for _, i := range []int{0, 6, 34} {
		for c := range 1 << 16 {
			s := []byte(canonical)
			s[i], s[i+1] = byte(c>>8), byte(c)
			parseSame(t, string(s))
		}
	}
	for _, d := range "0123456789abcdef" {
		s := []byte(canonical)
		for i := range s {
			if s[i] != '-' {
				s[i] = byte(d)
			}
		}
		parseSame(t, string(s))
	}
}

// FuzzParseUUID: on any text, parseUUID agrees with encoding/hex.
func FuzzParseUUID(f *testing.F) {
	for _, s := range []string{"0b5e4c52-8a0e-5d3c-9f6e-1c2d3e4f5a6b", "ffffffff-ffff-ffff-ffff-ffffffffffff",
		"00000000-0000-0000-0000-000000000000", "0B5E4C52-8A0E-5D3C-9F6E-1C2D3E4F5A6B", "0b5e4c52-8a0e-5d3c-9f6e-1c2d3e4f5a6\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parseSame(t, s)
		if len(s) >= 32 {
			parseSame(t, s[:8]+"-"+s[8:12]+"-"+s[12:16]+"-"+s[16:20]+"-"+s[20:32])
		}
	})
}

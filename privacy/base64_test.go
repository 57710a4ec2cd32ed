package privacy

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"strconv"
	"testing"
)

// decodeSame checks appendDecode64 against base64.StdEncoding.AppendDecode
// on src, appended to an empty slice, to a prefix with no spare capacity
// and to one with room: the same bytes, the same error, the prefix kept.
func decodeSame(t *testing.T, src []byte) {
	t.Helper()
	for _, dst := range [][]byte{nil, []byte("prefix"), append(make([]byte, 0, 200), "prefix"...)} {
		want, werr := base64.StdEncoding.AppendDecode(bytes.Clone(dst), src)
		got, err := appendDecode64(dst, src)
		if werr != nil || err != nil {
			if err == nil || werr == nil || err.Error() != werr.Error() {
				t.Fatalf("%q after %q: error %v, the standard encoding's %v", src, dst, err, werr)
			}
			continue
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%q after %q: decoded %q, the standard encoding %q", src, dst, got, want)
		}
	}
}

// Texts of every length up to 60 bytes encoded, each with a padding
// character, a line break, a byte outside the alphabet or the URL
// alphabet's characters at every position, and padding with bits left
// over: appendDecode64 decides and decodes as the standard encoding.
func TestDecode64AtEveryPosition(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	specials := []string{"=", "==", "\n", "\r\n", "-", "_", " ", "\x00", "\xff", "é", "A", "/"}
	for n := range 61 {
		plain := make([]byte, n)
		for i := range plain {
			plain[i] = byte(r.Uint32())
		}
		enc := []byte(base64.StdEncoding.EncodeToString(plain))
		decodeSame(t, enc)
		for p := 0; p <= len(enc); p++ {
			for _, sp := range specials {
				decodeSame(t, append(append(append([]byte{}, enc[:p]...), sp...), enc[p:]...)) // inserted
				if p < len(enc) {
					decodeSame(t, append(append(append([]byte{}, enc[:p]...), sp...), enc[p+1:]...)) // replaced
				}
			}
		}
	}
	// Bits the padding leaves over, which only Strict rejects.
	for _, s := range []string{"QR==", "QUJ=", "QUJDRA==", "QUJDREX=", "/w==", "//8=", "////"} {
		decodeSame(t, []byte(s))
	}
}

// FuzzDecode64: on any bytes, and on any bytes encoded, appendDecode64
// decides and decodes as base64.StdEncoding.AppendDecode.
func FuzzDecode64(f *testing.F) {
	for _, s := range []string{"", "QQ==", "QUI=", "QUJD", "QUJDRA==", "QUJDREVGR0g=", "QUJD\nREVG", "QR==", "QUJ=", "===="} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeSame(t, data)
		decodeSame(t, []byte(base64.StdEncoding.EncodeToString(data)))
	})
}

// BenchmarkDecode64 decodes envelopes' texts of a short field (a name,
// 40 bytes sealed) and of a webhook body (700 bytes sealed) with
// appendDecode64 and with the standard encoding.
func BenchmarkDecode64(b *testing.B) {
	for _, n := range []int{40, 728} {
		src := []byte(base64.StdEncoding.EncodeToString(make([]byte, n)))
		buf := make([]byte, 0, n+8)
		b.Run("pairs/"+strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				buf, _ = appendDecode64(buf[:0], src)
			}
		})
		b.Run("std/"+strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				buf, _ = base64.StdEncoding.AppendDecode(buf[:0], src)
			}
		})
	}
}

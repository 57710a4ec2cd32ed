package privacy

import (
	"encoding/base64"
	"encoding/binary"
	"slices"
)

// stdAlphabet is base64.StdEncoding's alphabet, the envelopes' encoding.
const stdAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// badPair is pairs64's entry for two bytes that are not both in the
// alphabet; its top bits are never set by a valid pair's 12 bits.
const badPair = 0xffff

// pairs64 maps two bytes of an encoded text, read as one big-endian
// uint16, to the 12 bits they encode: an envelope's base64 text is most of
// what opening a sealed field reads, and a table of pairs reads it in half
// the lookups of a table of characters. Padding, line breaks and every
// byte outside the alphabet map to badPair.
var pairs64 = func() *[1 << 16]uint16 {
	var one [256]uint16
	for i := range one {
		one[i] = badPair
	}
	for i := range len(stdAlphabet) {
		one[stdAlphabet[i]] = uint16(i)
	}
	t := new([1 << 16]uint16)
	for i := range t {
		hi, lo := one[i>>8], one[i&0xff]
		if hi == badPair || lo == badPair {
			t[i] = badPair
			continue
		}
		t[i] = hi<<6 | lo
	}
	return t
}()

// appendDecode64 appends src decoded to dst as
// base64.StdEncoding.AppendDecode does, and decides exactly as it: a text of
// whole quanta of the alphabet, padded only at its end, is decoded two
// characters per table read; any other text (line breaks, which the
// standard encoding skips, or an invalid one) is handed to AppendDecode
// whole, as dst was. Bytes of dst's spare capacity past the result may be
// written.
func appendDecode64(dst, src []byte) ([]byte, error) {
	n := len(src)
	if n == 0 || n%4 != 0 {
		return base64.StdEncoding.AppendDecode(dst, src)
	}
	t := pairs64
	// Room for the whole quanta plus two: the loop stores 8 bytes for 6.
	out := slices.Grow(dst, n/4*3+2)
	o := out[len(dst) : len(dst)+n/4*3+2]
	j, ok := decodeQuanta(o, src[:n-4])
	if !ok {
		return base64.StdEncoding.AppendDecode(dst, src)
	}
	// The last quantum, padded or not; the bits the padding leaves over are
	// not checked, as the standard (not Strict) encoding does not.
	w := binary.BigEndian.Uint32(src[n-4:])
	a := t[w>>16]
	switch {
	case src[n-2] == '=' && src[n-1] == '=':
		if a == badPair {
			break
		}
		o[j] = byte(a >> 4)
		return out[:len(dst)+j+1], nil
	case src[n-1] == '=':
		// The third character's 6 bits, read as a pair with 'A' (zero).
		c := t[w&0xff00|'A']
		if (a|c)&0xf000 != 0 {
			break
		}
		v := uint32(a)<<6 | uint32(c>>6)
		o[j], o[j+1] = byte(v>>10), byte(v>>2)
		return out[:len(dst)+j+2], nil
	default:
		b := t[uint16(w)]
		if (a|b)&0xf000 != 0 {
			break
		}
		v := uint32(a)<<12 | uint32(b)
		o[j], o[j+1], o[j+2] = byte(v>>16), byte(v>>8), byte(v)
		return out[:len(dst)+j+3], nil
	}
	return base64.StdEncoding.AppendDecode(dst, src)
}

// decodeQuanta decodes src, whole quanta of the alphabet without padding,
// into o, which has room for them and two bytes more, and says how many
// bytes it wrote, or false if src holds a byte outside the alphabet.
func decodeQuanta(o, src []byte) (int, bool) {
	t := pairs64
	j := 0
	for ; len(src) >= 16 && len(o) >= 14; src = src[16:] {
		w, x := binary.BigEndian.Uint64(src), binary.BigEndian.Uint64(src[8:])
		a, b, c, d := t[w>>48], t[uint16(w>>32)], t[uint16(w>>16)], t[uint16(w)]
		e, f, g, h := t[x>>48], t[uint16(x>>32)], t[uint16(x>>16)], t[uint16(x)]
		if (a|b|c|d|e|f|g|h)&0xf000 != 0 {
			return 0, false
		}
		binary.BigEndian.PutUint64(o, (uint64(a)<<36|uint64(b)<<24|uint64(c)<<12|uint64(d))<<16)
		binary.BigEndian.PutUint64(o[6:], (uint64(e)<<36|uint64(f)<<24|uint64(g)<<12|uint64(h))<<16)
		o = o[12:]
		j += 12
	}
	for ; len(src) >= 8 && len(o) >= 8; src = src[8:] {
		w := binary.BigEndian.Uint64(src)
		a, b, c, d := t[w>>48], t[uint16(w>>32)], t[uint16(w>>16)], t[uint16(w)]
		if (a|b|c|d)&0xf000 != 0 {
			return 0, false
		}
		binary.BigEndian.PutUint64(o, (uint64(a)<<36|uint64(b)<<24|uint64(c)<<12|uint64(d))<<16)
		o = o[6:]
		j += 6
	}
	if len(src) == 4 && len(o) >= 4 {
		w := binary.BigEndian.Uint32(src)
		a, b := t[w>>16], t[uint16(w)]
		if (a|b)&0xf000 != 0 {
			return 0, false
		}
		binary.BigEndian.PutUint32(o, (uint32(a)<<12|uint32(b))<<8)
		j += 3
	}
	return j, true
}

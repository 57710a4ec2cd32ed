package httpapi

import "testing"

func TestMasks(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{MaskPhone("13812345678"), "138****5678"},
		{MaskPhone("123"), "***"},
		{MaskCard("123456789012345"), "1234*******2345"},
		{MaskCard("1234"), "****"},
		{MaskName("韩梅梅"), "韩**"},
		{MaskName("Li"), "L*"},
		{MaskName(""), "*"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

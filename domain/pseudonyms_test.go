package domain_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
)

func TestBindingStreamsAreKeyedHashes(t *testing.T) {
	a, err := domain.NewPseudonyms(bytes.Repeat([]byte{1}, 32))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := domain.NewPseudonyms(bytes.Repeat([]byte{2}, 32))
	id := "li.lei@example.com"
	s := a.BindingStream(7, id)
	if strings.Contains(s, "li.lei") || !strings.HasPrefix(s, "channeluserhmac-7-") || len(s) != len("channeluserhmac-7-")+64 {
		t.Fatalf("binding stream %q", s)
	}
	if a.BindingStream(7, id) != s {
		t.Fatal("not deterministic: the binding would not be a lock")
	}
	if b.BindingStream(7, id) == s || a.BindingStream(8, id) == s || a.BindingStream(7, id+" ") == s {
		t.Fatal("another key, app or id names the same stream")
	}
	// An id with the separator bytes cannot collide with another app's.
	if a.ChannelUser(1, "2\x00x") == a.ChannelUser(12, "x") {
		t.Fatal("ambiguous input")
	}
	if _, err := domain.NewPseudonyms(make([]byte, 16)); err == nil {
		t.Fatal("a short key accepted")
	}
}

func TestLegacyBindingStreamNames(t *testing.T) {
	p, _ := domain.NewPseudonyms(bytes.Repeat([]byte{1}, 32))
	for _, id := range []string{"u-1", "+86 138-0013 8000", "a/b%c", "李雷", "x-y-z"} {
		legacy := domain.LegacyBindingStream(42, id)
		app, got, ok := domain.ParseLegacyBindingStream(legacy)
		if !ok || app != 42 || got != id {
			t.Fatalf("parse %q: %d %q %v", legacy, app, got, ok)
		}
		if p.Stream(legacy) != p.BindingStream(42, id) {
			t.Fatalf("legacy %q shown as %q", legacy, p.Stream(legacy))
		}
	}
	for _, other := range []string{"user-1", "channeluser-x-y", "channeluser-1-", "channeluser-01-a", p.BindingStream(1, "a")} {
		if p.Stream(other) != other {
			t.Fatalf("%q renamed to %q", other, p.Stream(other))
		}
	}
}

// A pseudonym is HMAC-SHA-256 over "channel_user", NUL, the app id, NUL and
// the id, and a binding stream is named after it, whichever goroutine
// computes it and however many at once (the keyed MACs and their buffers
// are reused between calls).
func TestPseudonymsConcurrentlyMatchTheirDefinition(t *testing.T) {
	key := bytes.Repeat([]byte{3}, 32)
	p, _ := domain.NewPseudonyms(key)
	want := func(app int64, id string) string {
		m := hmac.New(sha256.New, key)
		m.Write([]byte("channel_user\x00" + strconv.FormatInt(app, 10) + "\x00" + id))
		return hex.EncodeToString(m.Sum(nil))
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				app, id := int64(g+1), fmt.Sprintf("user-%d-%d", g, i)
				if got := p.ChannelUser(app, id); got != want(app, id) {
					t.Errorf("ChannelUser(%d, %q) = %s, want %s", app, id, got, want(app, id))
					return
				}
				// The name every stored binding has: a log's users are
				// found under it.
				if got, stream := p.BindingStream(app, id), "channeluserhmac-"+strconv.FormatInt(app, 10)+"-"+want(app, id); got != stream {
					t.Errorf("BindingStream(%d, %q) = %s, want %s", app, id, got, stream)
					return
				}
			}
		})
	}
	wg.Wait()
}

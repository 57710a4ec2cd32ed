package privacy

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/sharedguard"
)

// Subscriptions share each event's decrypted plaintext: two followers get
// the same text as appended; a follower that writes into it is reported by
// the guard when the store closes; and after the person's key is destroyed
// a new follower reads the fields as erased (the shared plaintext went with
// the cache).
func TestSubscriptionsShareThePlaintextReadOnly(t *testing.T) {
	sharedguard.On()
	ctx := context.Background()
	for _, scribble := range []bool{false, true} {
		sharedguard.Reset()
		s, ks := newStore(t)
		id := uuid.NewString()
		if _, err := s.Append(ctx, "user-7", events.NoStream(), events.Proposed{ID: id, Type: "user.family_member.created", Data: []byte(member)}); err != nil {
			t.Fatal(err)
		}
		next := func() events.Recorded {
			t.Helper()
			sub, err := s.SubscribeAll(ctx, events.Position{})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			rec, err := sub.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return rec
		}
		a, b := next(), next()
		if string(a.Data) != member || string(b.Data) != member {
			t.Fatalf("followers read %s and %s, want %s", a.Data, b.Data, member)
		}
		if scribble {
			a.Data[len(a.Data)-2] = 'X'
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := sharedguard.Violations(); err == nil || !strings.Contains(err.Error(), id) {
				t.Fatalf("a follower wrote into shared plaintext of %s and the guard said %v", id, err)
			}
			sharedguard.Reset()
			continue
		}
		if err := ks.Destroy(ctx, "user-7"); err != nil {
			t.Fatal(err)
		}
		if after := string(next().Data); strings.Contains(after, "李四") || !strings.Contains(after, `"name":null`) {
			t.Fatalf("after the key was destroyed a new follower reads %s", after)
		}
		if string(a.Data) != member {
			t.Fatalf("the plaintext a follower already held changed under it: %s", a.Data)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := sharedguard.Violations(); err != nil {
			t.Fatalf("followers that only read are reported: %v", err)
		}
	}
}

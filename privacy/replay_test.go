package privacy

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
)

// A replay subscription reads every event as a follower of the whole log
// reads it, and keeps none of the replayed stretch's plaintext in the
// opened-events cache; the events after the stretch are kept as any
// subscription keeps them.
func TestReplayKeepsNoPlaintextOfItsStretch(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	var ids []string
	for range 4 {
		id := uuid.NewString()
		ids = append(ids, id)
		if _, err := s.Append(ctx, "user-7", events.Any(), events.Proposed{ID: id, Type: "user.family_member.created", Data: []byte(member)}); err != nil {
			t.Fatal(err)
		}
	}
	s.DropOpened() // what the appends kept: the replay opens the stretch
	all, err := s.ReadAll(ctx, events.Position{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	through := all[1].Position
	s.DropOpened()
	wants := func(string) bool { return true }
	sub, err := s.SubscribeReplay(ctx, events.Position{}, through, wants)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for i := range ids {
		rec, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rec.ID != ids[i] || string(rec.Data) != member {
			t.Fatalf("replay read %s %s, want %s %s", rec.ID, rec.Data, ids[i], member)
		}
	}
	s.opened.mu.Lock()
	defer s.opened.mu.Unlock()
	for i, rec := range all {
		_, kept := s.opened.byID[cacheKey{rec.ID, rec.Position}]
		if replayed := !through.Less(rec.Position); kept == replayed {
			t.Errorf("event %d (replayed: %v) kept in the cache: %v", i, replayed, kept)
		}
	}
}

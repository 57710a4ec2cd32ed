package privacy

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
)

// appendedVectors are sealVectors plus documents whose personal values are
// repeated, escaped or look like envelopes themselves.
var appendedVectors = append([]struct{ typ, data string }{
	{"user.family_member.created", `{"member":{"name":"a","name":"b\u00e9\"","phone":"{\"$enc\":\"k:AAAA\"}"}}`},
	{"user.family_member.created", `{"member":{"name":{"$enc":"k:AAAA"},"phone":[1,{"$enc":"x"}]},"member":{"name":"again"}}`},
	{"webhook.delivery.created", `{"delivery_id":"d","body":"{\"open_user_id\":7,\"name\":\"\\u674e\"}","source_stream":"order-9"}`},
}, sealVectors...)

// An event this process appended reads, the first time, as the plaintext
// it sealed (no second locate and decryption), and that plaintext is what a
// store with no cache of its own opens from the stored bytes: byte for
// byte, for every vector, through a subscription and through ReadStream.
func TestAppendedEventsReadAsAStoreWithoutCacheOpensThem(t *testing.T) {
	ctx := context.Background()
	s, ks := newStore(t)
	cold := New(s.Inner(), ks)
	var prev events.Position
	for i, v := range appendedVectors {
		stream := "user-7"
		if i%2 == 1 {
			stream = "order-9"
		}
		id := uuid.NewString()
		res, err := s.Append(ctx, stream, events.Any(), events.Proposed{ID: id, Type: v.typ, Data: []byte(v.data)})
		if err != nil {
			t.Fatalf("%s: %v", v.typ, err)
		}
		s.opened.mu.Lock()
		_, kept := s.opened.appended[id]
		s.opened.mu.Unlock()
		sealed, err := s.Inner().ReadStream(ctx, stream, res.Revision, 1)
		if err != nil || len(sealed) != 1 {
			t.Fatalf("%s: inner read: %v", v.typ, err)
		}
		if sealedSomething := strings.Contains(string(sealed[0].Data), envPrefix) && string(sealed[0].Data) != v.data; kept != sealedSomething {
			t.Fatalf("%s: plaintext kept %v, fields sealed %v", v.typ, kept, sealedSomething)
		}
		sub, err := s.SubscribeAll(ctx, prev)
		prev = res.Position
		if err != nil {
			t.Fatal(err)
		}
		hot, err := sub.Next(ctx)
		sub.Close()
		if err != nil {
			t.Fatal(err)
		}
		if kept {
			s.opened.mu.Lock()
			_, still := s.opened.appended[id]
			s.opened.mu.Unlock()
			if still {
				t.Fatalf("%s: the first read did not take the kept plaintext", v.typ)
			}
		}
		want, err := cold.Open(ctx, sealed[0])
		if err != nil {
			t.Fatal(err)
		}
		again, err := s.ReadStream(ctx, stream, res.Revision, 1)
		if err != nil {
			t.Fatal(err)
		}
		if string(hot.Data) != string(want.Data) || string(again[0].Data) != string(want.Data) || string(want.Data) != v.data {
			t.Fatalf("%s: read %s and %s, a cold store opens %s, appended %s", v.typ, hot.Data, again[0].Data, want.Data, v.data)
		}
	}
}

// The kept plaintext is only ever given for the very bytes it was sealed
// as: another node's event with the same id and other data reads as that
// other data.
func TestAppendedPlaintextNeedsTheSealedBytes(t *testing.T) {
	ctx := context.Background()
	s, ks := newStore(t)
	other := New(s.Inner(), ks) // another writer of the same log, with its own cache
	id := uuid.NewString()
	// This process seals (and keeps) one version, whose append then fails.
	if _, err := s.Append(ctx, "user-7", events.Exact(3), events.Proposed{ID: id, Type: "user.family_member.created", Data: []byte(member)}); err == nil {
		t.Fatal("an append expecting revision 3 of a missing stream succeeded")
	}
	s.opened.mu.Lock()
	_, kept := s.opened.appended[id]
	s.opened.mu.Unlock()
	if !kept {
		t.Fatal("the sealed plaintext was not kept: this test would prove nothing")
	}
	changed := strings.Replace(member, "李四", "王五", 1)
	if _, err := other.Append(ctx, "user-7", events.NoStream(), events.Proposed{ID: id, Type: "user.family_member.created", Data: []byte(changed)}); err != nil {
		t.Fatal(err)
	}
	recs, err := s.ReadStream(ctx, "user-7", 0, 0)
	if err != nil || len(recs) != 1 {
		t.Fatalf("read: %v", err)
	}
	if string(recs[0].Data) != changed {
		t.Fatalf("read %s, stored %s", recs[0].Data, changed)
	}
}

// A key destroyed after the append, before any read, makes the kept
// plaintext unreachable: the first read shows the fields erased. And the
// node's sweep (DropOpened) forgets kept plaintext as it forgets opened.
func TestAppendedPlaintextGoesWithTheKey(t *testing.T) {
	ctx := context.Background()
	s, ks := newStore(t)
	if _, err := s.Append(ctx, "user-7", events.NoStream(), events.Proposed{ID: uuid.NewString(), Type: "user.family_member.created", Data: []byte(member)}); err != nil {
		t.Fatal(err)
	}
	if err := ks.Destroy(ctx, "user-7"); err != nil {
		t.Fatal(err)
	}
	recs, err := s.ReadStream(ctx, "user-7", 0, 0)
	if err != nil || len(recs) != 1 {
		t.Fatalf("read: %v", err)
	}
	if got := string(recs[0].Data); strings.Contains(got, "李四") || !strings.Contains(got, `"name":null`) {
		t.Fatalf("after the key was destroyed the first read shows %s", got)
	}

	if _, err := s.Append(ctx, "user-8", events.NoStream(), events.Proposed{ID: uuid.NewString(), Type: "user.family_member.created", Data: []byte(member)}); err != nil {
		t.Fatal(err)
	}
	s.DropOpened()
	s.opened.mu.Lock()
	n, size := len(s.opened.appended), s.opened.appendedBytes
	s.opened.mu.Unlock()
	if n != 0 || size != 0 {
		t.Fatalf("after DropOpened %d kept plaintexts (%d bytes) remain", n, size)
	}
}

// Concurrent appends of distinct events and of the same id, with readers
// taking the kept plaintext while others add to it, stay within the
// bound and read as appended (run with -race).
func TestAppendedPlaintextUnderConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	const writers, each = 4, 3 * maxAppended / 4
	errs := make(chan error, writers)
	dup := uuid.NewString()
	for range writers {
		go func() {
			for i := range each {
				id := uuid.NewString()
				if i%50 == 0 {
					id = dup // the same id from every writer: at most one lands
				}
				_, err := s.Append(ctx, "user-7", events.Any(), events.Proposed{ID: id, Type: "user.family_member.created", Data: []byte(member)})
				if err != nil && id != dup {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	recs, err := s.ReadStream(ctx, "user-7", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if string(r.Data) != member {
			t.Fatalf("%s reads %s", r.ID, r.Data)
		}
	}
	s.opened.mu.Lock()
	defer s.opened.mu.Unlock()
	if len(s.opened.appended) > maxAppended || s.opened.appendedBytes > maxAppendedBytes || s.opened.appendedBytes < 0 {
		t.Fatalf("kept %d plaintexts, %d bytes: over the bound", len(s.opened.appended), s.opened.appendedBytes)
	}
	sum := 0
	for _, a := range s.opened.appended {
		sum += len(a.sealed) + len(a.plain)
	}
	if sum != s.opened.appendedBytes {
		t.Fatalf("kept bytes counted %d, held %d", s.opened.appendedBytes, sum)
	}
}

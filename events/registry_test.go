package events_test

import (
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
)

type pinged struct {
	N int `json:"n"`
}

func (pinged) EventType() string { return "test.pinged" }

// TestEncodeIDsAreTimeOrderedUUIDs checks the IDs Encode gives events:
// RFC 9562 UUIDs (what EventStoreDB and the operator API accept), version 7,
// unique across concurrent writers, and increasing within one writer, so an
// embedded log's ID index grows at its end.
func TestEncodeIDsAreTimeOrderedUUIDs(t *testing.T) {
	reg := events.NewRegistry()
	reg.MustRegister(1, pinged{})
	const writers, each = 8, 200
	ids := make([][]string, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				p, err := reg.Encode(pinged{N: i}, events.Metadata{})
				if err != nil {
					t.Error(err)
					return
				}
				ids[w] = append(ids[w], p.ID)
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for w, list := range ids {
		for i, id := range list {
			u, err := uuid.Parse(id)
			if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 || u.String() != id {
				t.Fatalf("writer %d id %d = %q: version %d, variant %s, %v; want a canonical version 7 UUID", w, i, id, u.Version(), u.Variant(), err)
			}
			if seen[id] {
				t.Fatalf("id %s given twice", id)
			}
			seen[id] = true
			if i > 0 && list[i-1] >= id {
				t.Fatalf("writer %d: id %s after %s, want increasing", w, id, list[i-1])
			}
		}
	}
}

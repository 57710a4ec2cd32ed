package node

import (
	"context"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
	"github.com/healthtech/partner-open-platform/internal/datakeys/files"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

// Whether review decisions are mailed from the log's start is decided once
// per log and kept outside it: an empty log says yes and records the flag
// (its later starts keep the answer though the log has grown); a log that
// held events when first opened says no, records nothing, and leaves the
// beginning to the decision-mail follower's marker. Neither appends.
func TestDecisionMailsFromStartIsDecidedOncePerLog(t *testing.T) {
	ctx := context.Background()
	keys := func(t *testing.T) *datakeys.Keys {
		backend, err := files.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		sealer, err := secrets.New(make([]byte, 32))
		if err != nil {
			t.Fatal(err)
		}
		return datakeys.New(backend, sealer)
	}
	appendOne := func(t *testing.T, s *memory.Store) {
		if _, err := s.Append(ctx, "app-1", events.Any(), events.Proposed{ID: "e-" + t.Name(), Type: "app.created", Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(t *testing.T, s *memory.Store) int {
		recs, err := s.ReadAll(ctx, events.Position{}, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}

	t.Run("a fresh log", func(t *testing.T) {
		ks, store := keys(t), memory.New()
		if from, err := decisionMailsFromStart(ctx, ks, store); err != nil || !from {
			t.Fatalf("fresh log: %v, %v; want from the start", from, err)
		}
		appendOne(t, store)
		if from, err := decisionMailsFromStart(ctx, ks, store); err != nil || !from {
			t.Fatalf("the same log grown: %v, %v; want from the start still", from, err)
		}
		if n := count(t, store); n != 1 {
			t.Fatalf("the decisions appended %d events", n-1)
		}
	})
	t.Run("a log of an earlier release", func(t *testing.T) {
		ks, store := keys(t), memory.New()
		appendOne(t, store)
		for range 2 {
			if from, err := decisionMailsFromStart(ctx, ks, store); err != nil || from {
				t.Fatalf("a log with events: %v, %v; want not from the start", from, err)
			}
		}
		if _, err := ks.Backend().Get(ctx, DecisionMailsFromStartFlag); err == nil {
			t.Fatal("the flag was recorded for a log that held events")
		}
		if n := count(t, store); n != 1 {
			t.Fatalf("the decisions appended %d events", n-1)
		}
	})
}

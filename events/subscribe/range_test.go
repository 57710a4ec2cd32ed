package subscribe_test

import (
	"context"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/events/subscribe"
)

// A pipeline over a RangeSource sees exactly the events after From up to
// Until, in order and in bounded batches, and then returns by itself.
func TestRangeSourceEndsAtUntil(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	var pos []events.Position
	for i := 0; i < 10; i++ {
		res, err := s.Append(ctx, "s-"+string(rune('a'+i)), events.Any(), events.Proposed{ID: string(rune('a' + i)), Type: "t", Data: []byte(`{}`), Meta: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		pos = append(pos, res.Position)
	}
	var got []string
	var batches int
	p := subscribe.Pipeline[[]events.Recorded]{
		Name:    "range",
		Source:  subscribe.RangeSource{Store: s, From: func(context.Context) (events.Position, error) { return pos[1], nil }, Until: pos[7], Batch: 4},
		Prepare: func(_ context.Context, b []events.Recorded) ([]events.Recorded, error) { return b, nil },
		Commit: func(_ context.Context, bs [][]events.Recorded) error {
			for _, b := range bs {
				batches++
				if len(b) > 4 {
					t.Errorf("batch of %d events, want at most 4", len(b))
				}
				for _, r := range b {
					got = append(got, r.ID)
				}
			}
			return nil
		},
	}
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if want := "cdefgh"; joined(got) != want {
		t.Fatalf("replayed %q, want %q", joined(got), want)
	}
	if batches < 2 {
		t.Fatalf("%d batches, want the range read in pages", batches)
	}
}

func joined(ids []string) string {
	out := ""
	for _, id := range ids {
		out += id
	}
	return out
}

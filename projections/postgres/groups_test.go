package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory"
)

// TestGroupUpsertsMatchTheMemoryStore: group upserts, a rename, a dissolve
// and an upsert of the dissolved group, applied by the users projector in
// batches, leave the same groups on Postgres (which writes them without
// reading the group first) as in memory (which reads, then replaces): a
// rename keeps the group's creation time, app group id and dissolved flag.
func TestGroupUpsertsMatchTheMemoryStore(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pg := open(t, pgtest.New(t))
	defer pg.Close()
	mem := memory.New()
	defer mem.Close()

	const app, owner = 7, 70
	t0 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	var pos uint64
	env := func(minutes int, p events.Payload) events.Envelope {
		pos++
		return events.Envelope{
			Recorded: events.Recorded{Position: events.Position{Commit: pos, Prepare: pos}},
			Payload:  p,
			Metadata: events.Metadata{AppID: app, OccurredAt: t0.Add(time.Duration(minutes) * time.Minute)},
		}
	}
	upsert := func(id int64, name string) *catalog.FamilyGroupUpserted {
		return &catalog.FamilyGroupUpserted{OpenUserID: owner, FamilyGroupID: id, AppGroupID: id + 1000, Name: name}
	}
	batches := [][]events.Envelope{
		{env(0, upsert(1, "home")), env(1, upsert(2, "parents")), env(2, upsert(1, "home, renamed"))},
		{env(3, upsert(3, "to dissolve")), env(4, &catalog.FamilyGroupDissolved{OpenUserID: owner, FamilyGroupID: 3, AppGroupID: 1003})},
		{env(5, upsert(3, "renamed after dissolving")), env(6, upsert(2, "parents, renamed"))},
	}
	for _, s := range []projections.UserStore{pg, mem} {
		p := projections.UsersProjector(s)
		for _, b := range batches {
			if err := p.Apply(ctx, b, b[len(b)-1].Position); err != nil {
				t.Fatalf("%T: apply: %v", s, err)
			}
		}
	}
	// Group reads inside a transaction see dissolved groups too.
	group := func(s projections.UserStore, id int64) projections.Group {
		t.Helper()
		var g projections.Group
		err := s.Update(ctx, "group-probe", events.Position{Commit: pos, Prepare: pos}, func(tx projections.UserTx) error {
			var err error
			g, err = tx.Group(ctx, id)
			return err
		})
		if err != nil {
			t.Fatalf("%T: group %d: %v", s, id, err)
		}
		return g
	}
	for _, id := range []int64{1, 2, 3} {
		if got, want := group(pg, id), group(mem, id); got != want {
			t.Errorf("group %d on Postgres = %+v, in memory %+v", id, got, want)
		}
	}
	if g := group(pg, 1); g.Name != "home, renamed" || g.AppGroupID != 1001 || !g.CreatedAt.Equal(t0) || !g.UpdatedAt.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("renamed group = %+v: want the new name, created at %s, updated 2 minutes later", g, t0)
	}
	if g := group(pg, 3); !g.Dissolved || g.Name != "renamed after dissolving" {
		t.Errorf("dissolved group after an upsert = %+v: want still dissolved, renamed", g)
	}
}

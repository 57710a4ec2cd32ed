package postgres_test

import (
	"context"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/postgres"
	"github.com/healthtech/partner-open-platform/projections/storetest"
)

func TestSnapshot(t *testing.T) {
	storetest.RunSnapshot(t, func(t *testing.T) storetest.SnapshotStore { return open(t, pgtest.New(t)) })
}

// Under SeeHead the snapshot carries the head the event store's statement
// returns, converted by its function; without it, no head.
func TestSnapshotReadsTheHeadWhenToldHow(t *testing.T) {
	url := pgtest.New(t)
	s := open(t, url)
	defer s.Close()
	ctx := context.Background()
	q := projections.SnapshotQuery{AppID: 1, OpenUserID: 10}
	if snap, err := s.Snapshot(ctx, q); err != nil || snap.HeadKnown || s.SeesHead() {
		t.Fatalf("without SeeHead: %+v, %v (sees head %v)", snap, err, s.SeesHead())
	}
	exec(t, url, `CREATE TABLE fake_log (position bigint)`)
	exec(t, url, `INSERT INTO fake_log VALUES (3), (9)`)
	s.SeeHead(`SELECT coalesce(max(position), 0) FROM fake_log`, func(p int64) events.Position {
		return events.Position{Commit: uint64(p), Prepare: uint64(p) - 1}
	})
	snap, err := s.Snapshot(ctx, q)
	if err != nil || !snap.HeadKnown || snap.Head != (events.Position{Commit: 9, Prepare: 8}) || !s.SeesHead() {
		t.Fatalf("with SeeHead: %+v, %v", snap, err)
	}
}

var _ storetest.SnapshotStore = (*postgres.Store)(nil)

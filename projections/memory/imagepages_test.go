package memory_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory"
	"github.com/healthtech/partner-open-platform/projections/memory/snapfile"
)

// userWrite is the i-th write of a projector that keeps changing a users
// read model of n users filled by snapFixture.fill: it renames a user,
// registers a new one (user, group, member), deletes a member or erases a
// user, spread over the whole key range (so over pages read already and
// pages still to read). It depends on i and n alone, so a replay applies
// the same writes.
func userWrite(ctx context.Context, i, n int) func(projections.UserTx) error {
	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	k := int64(1 + (i*7919)%n)
	return func(tx projections.UserTx) error {
		switch i % 4 {
		case 0: // a rename, or a user erased before registering again
			if err := tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: k, ChannelUserID: fmt.Sprintf("c%d", k), Name: fmt.Sprintf("renamed %d", i), Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at}); err != nil {
				return err
			}
			return tx.PutMember(ctx, projections.Member{AppID: 1, OpenUserID: k, MemberID: k, AppUserID: "m", AppGroupID: 1, FamilyGroupID: k, Name: fmt.Sprintf("m%d", i), Relationship: "SON", UpdatedAt: at})
		case 1:
			id := int64(n + i)
			if err := tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: id, ChannelUserID: fmt.Sprintf("new%d", id), Name: "n", Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at}); err != nil {
				return err
			}
			if err := tx.PutGroup(ctx, projections.Group{AppID: 1, OpenUserID: id, FamilyGroupID: id, AppGroupID: 1, Name: "g", CreatedAt: at, UpdatedAt: at}); err != nil {
				return err
			}
			return tx.PutMember(ctx, projections.Member{AppID: 1, OpenUserID: id, MemberID: id, AppUserID: "m", AppGroupID: 1, FamilyGroupID: id, Name: "m", Relationship: "SON", UpdatedAt: at})
		case 2:
			return tx.DeleteMember(ctx, k, at)
		default:
			return tx.EraseUser(ctx, k)
		}
	}
}

// restoredImages loads f's snapshot into a fresh store and returns its
// images, which are what the file holds.
func restoredImages(t *testing.T, f *snapFixture) []snapfile.Image {
	t.Helper()
	g := *f
	g.store = memory.New()
	ok, err := g.snapshotter().Load(f.ctx)
	if err != nil || !ok {
		t.Fatalf("Load = %v, %v", ok, err)
	}
	return imagesOf(t, g.store)
}

// A snapshot write reads the users read model a page at a time, releasing
// its lock in between, so the projector's writes go on during the write
// (each one here runs while the write is in progress, in the gap between
// two holds: it would deadlock if a hold spanned the copy), and the file
// still holds every row exactly as it was at the image's checkpoint.
func TestPagedSnapshotIsTheImageAtItsCheckpoint(t *testing.T) {
	defer memory.SetPageRows(64)()
	const n = 1000
	f := newSnapFixture(t)
	f.fill(t, n)
	want := imagesOf(t, f.store)
	steps := 0
	memory.SetImageStep(f.store, func() {
		steps++
		if err := f.store.Update(f.ctx, "users", f.event(t), userWrite(f.ctx, steps, n)); err != nil {
			t.Error(err)
		}
	})
	if err := f.snapshotter().Write(f.ctx); err != nil {
		t.Fatal(err)
	}
	memory.SetImageStep(f.store, nil)
	// Users, groups and members: n rows each (a third of the members
	// deleted, still rows), listed then read 64 at a time.
	if least := 2 * 3 * (n / 64); steps < least {
		t.Fatalf("the write released the read model's lock %d times: want at least %d (every 64 rows listed or read)", steps, least)
	}
	now := imagesOf(t, f.store)
	if reflect.DeepEqual(now[0], want[0]) {
		t.Fatal("the writes made between the image's holds did not reach the read model")
	}
	got := restoredImages(t, f)
	if got[0].Checkpoint != want[0].Checkpoint {
		t.Fatalf("the snapshot's users checkpoint is %s: want %s, where the write began", got[0].Checkpoint, want[0].Checkpoint)
	}
	if !reflect.DeepEqual(got, want) {
		for i := range got {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("read model %s: the snapshot (%d rows) differs from its image when the write began (%d rows)", want[i].ReadModel, got[i].Rows(), want[i].Rows())
			}
		}
		t.FailNow()
	}
	// The write ended its copy-on-write side: the next one holds the
	// writes made meanwhile.
	if err := f.snapshotter().Write(f.ctx); err != nil {
		t.Fatal(err)
	}
	if got := restoredImages(t, f); !reflect.DeepEqual(got, now) {
		t.Fatal("the next snapshot differs from the read models it was written from")
	}
}

// Snapshots written while a projector keeps writing from another goroutine
// each equal a replay of the same writes up to the snapshot's checkpoint
// (run it with -race: the pages, the key listing and the copy-on-write
// side share the read model's lock with the projector).
func TestPagedSnapshotsUnderConcurrentWritesEqualReplays(t *testing.T) {
	defer memory.SetPageRows(32)()
	const n = 600
	f := newSnapFixture(t)
	f.fill(t, n)
	base := imagesOf(t, f.store)[0]

	type write struct {
		pos events.Position
		i   int
	}
	var mu sync.Mutex
	var writes []write
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			pos := f.event(t)
			if err := f.store.Update(f.ctx, "users", pos, userWrite(f.ctx, i, n)); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			writes = append(writes, write{pos, i})
			mu.Unlock()
		}
	}()
	var snaps []snapfile.Image
	for len(snaps) < 4 {
		if err := f.snapshotter().Write(f.ctx); err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, restoredImages(t, f)[0])
	}
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	during := 0
	for _, snap := range snaps {
		replay := memory.New()
		if err := replay.Restore(f.ctx, cloneUsersImage(base)); err != nil {
			t.Fatal(err)
		}
		for _, w := range writes {
			if snap.Checkpoint.Less(w.pos) {
				during++
				break
			}
			if err := replay.Update(f.ctx, "users", w.pos, userWrite(f.ctx, w.i, n)); err != nil {
				t.Fatal(err)
			}
		}
		want, err := replay.Image(f.ctx, projections.ReadModelUsers)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(snap, want) {
			t.Fatalf("the snapshot at %s (%d rows) differs from a replay of the writes up to it (%d rows)", snap.Checkpoint, snap.Rows(), want.Rows())
		}
	}
	if during == 0 {
		t.Fatal("every write came after the last snapshot: none was written while writes kept coming")
	}
}

// cloneUsersImage copies an image's row slices, which Restore takes over.
func cloneUsersImage(im snapfile.Image) snapfile.Image {
	im.Users = append([]projections.User(nil), im.Users...)
	im.Groups = append([]projections.Group(nil), im.Groups...)
	im.Members = append([]projections.Member(nil), im.Members...)
	return im
}

// A read model emptied (a rebuild's reset) while its image is being
// written fails the write instead of writing a mix of the two states.
func TestPagedSnapshotFailsWhenItsReadModelIsReset(t *testing.T) {
	defer memory.SetPageRows(64)()
	f := newSnapFixture(t)
	f.fill(t, 300)
	reset := false
	memory.SetImageStep(f.store, func() {
		if !reset {
			reset = true
			if err := f.store.ResetReadModel(f.ctx, projections.ReadModelUsers); err != nil {
				t.Error(err)
			}
		}
	})
	if err := f.snapshotter().Write(f.ctx); err == nil {
		t.Fatal("a snapshot was written across a reset of its read model")
	}
}

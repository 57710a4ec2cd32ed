package memory

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory/snapfile"
)

// A restore builds the deliveries' indexes directly (restoreDeliveries);
// they must be what the projector's puts built in the store the image was
// taken from: the rows, both feeds, status counts, source positions and
// their counts, the subjects' deliveries and the due queue's contents.
func TestRestoreDeliveriesBuildsTheSameIndexes(t *testing.T) {
	ctx := context.Background()
	src := New()
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	statuses := []string{"pending", "retrying", "delivered", "dead_letter"}
	if err := src.UpdateDeliveries(ctx, "deliveries", events.Position{Commit: 1, Prepare: 1}, func(tx projections.DeliveryTx) error {
		for i := 500; i >= 1; i-- { // not in feed order
			next := at.Add(time.Duration(i%7) * time.Minute)
			d := projections.Delivery{DeliveryID: fmt.Sprintf("d%04d", (i*37)%1000), AppID: int64(1 + i%4), EndpointID: int64(i % 2),
				EventType: "user.registered", SourceEventID: fmt.Sprint("e", i/3),
				SourcePosition: events.Position{Commit: uint64(10 + i/3), Prepare: uint64(10 + i/3)}, // three deliveries per source
				Cursor:         events.Position{Commit: uint64(2000 + (i*53)%997), Prepare: uint64(2000 + (i*53)%997)},
				Body:           []byte(`{}`), Status: statuses[i%4], CreatedAt: at, UpdatedAt: at}
			if i%5 != 0 {
				d.Subject = fmt.Sprint("user-", i%40)
			}
			if i%3 != 0 {
				d.NextAttemptAt = &next
			}
			if err := tx.PutDelivery(ctx, d); err != nil {
				return err
			}
			if i%4 == 1 {
				if err := tx.AddAttempt(ctx, projections.Attempt{DeliveryID: d.DeliveryID, Attempt: 1, At: at, Outcome: "retry"}); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	im, err := src.Image(ctx, projections.ReadModelDeliveries)
	if err != nil {
		t.Fatal(err)
	}
	dst := New()
	if err := dst.Restore(ctx, im); err != nil {
		t.Fatal(err)
	}
	a, b := src.deliveryIndexes, dst.deliveryIndexes
	for name, pair := range map[string][2]any{
		"rows": {rowViews(src), rowViews(dst)}, "attempts": {a.attempts, b.attempts}, "feed": {feedIDs(src, a.feed), feedIDs(dst, b.feed)},
		"app feeds": {appFeedIDs(src), appFeedIDs(dst)}, "statuses": {a.statuses, b.statuses}, "sources": {a.sources, b.sources},
		"subjects": {subjectSets(src), subjectSets(dst)},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("%s differ after the restore", name)
		}
	}
	due := func(q appDue) []dueKey {
		var keys []dueKey
		for _, h := range q.apps {
			keys = append(keys, h.keys...)
			for i, k := range h.keys {
				if cell := h.at[k.id]; cell == nil || *cell != i || h.pos[i] != cell {
					t.Fatalf("due heap: %s is at %d, its index cell is not that position's", k.id, i)
				}
			}
		}
		slices.SortFunc(keys, compareDue)
		return keys
	}
	if got, want := due(b.due), due(a.due); !reflect.DeepEqual(got, want) || len(want) == 0 {
		t.Errorf("due queue differs after the restore: %d keys, want %d", len(got), len(want))
	}
	if len(a.feed) < 400 || len(a.subjects) == 0 || len(a.sources) == 0 {
		t.Fatalf("fixture too small: %d deliveries, %d subjects, %d sources", len(a.feed), len(a.subjects), len(a.sources))
	}
}

// feedIDs is the delivery ids of a feed of places in s, in its order
// (a restore puts the rows at other places than the puts did).
func feedIDs(s *Store, feed []uint32) []string {
	ids := make([]string, len(feed))
	for i, at := range feed {
		ids[i] = s.deliveries.at(at).deliveryID()
	}
	return ids
}

// appFeedIDs is each app's feed as feedIDs.
func appFeedIDs(s *Store) map[int64][]string {
	out := map[int64][]string{}
	for app, feed := range s.appFeed {
		out[app] = feedIDs(s, feed)
	}
	return out
}

// subjectSets is each subject's delivery ids, sorted (the index keeps them
// in no particular order).
func subjectSets(s *Store) map[string][]string {
	out := map[string][]string{}
	for subject, r := range s.subjects {
		var ids []string
		r.ids(func(at uint32) { ids = append(ids, s.deliveries.at(at).deliveryID()) })
		slices.Sort(ids)
		out[subject] = ids
	}
	return out
}

// rowViews is every delivery as its row reads (a row's event type is a
// number in its own store's table, its subject that store's entry).
func rowViews(s *Store) map[string]projections.Delivery {
	out := map[string]projections.Delivery{}
	for _, at := range s.feed {
		r := s.deliveries.at(at)
		d := r.view(r.deliveryID(), &s.eventTypes)
		out[d.DeliveryID] = d
	}
	return out
}

// A snapshot's decoded rows view the file's bytes (snapfile.Image): a
// restore must copy every text it keeps, or the read model would change
// with bytes it does not own (and keep the whole snapshot alive). The
// image's texts here view one buffer, scribbled over once restored: the
// restored read model must still read as the store the image came from.
func TestRestoreKeepsNoTextOfItsImage(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	refused := "connection refused"
	src := New()
	putDeliveries(t, src,
		rendered("0b5e4c52-8a0e-5d3c-9f6e-1c2d3e4f5a6b", 4, "user.profile.updated", "7d1a0c3e-2b4f-4e6a-8c9d-0e1f2a3b4c5d", 10, `,"open_user_id":7}`),
		projections.Delivery{DeliveryID: "delivery-not-a-uuid", AppID: 4, EndpointID: 2, EventType: "user.registered", SourceEventID: "event-not-a-uuid",
			SourcePosition: events.Position{Commit: 11, Prepare: 11}, Cursor: events.Position{Commit: 12, Prepare: 12},
			Body: []byte(`{"not":"rendered"}`), Subject: "user-7", Status: "retrying", Attempts: 1, NextAttemptAt: &at,
			LastError: &refused, CreatedAt: at, UpdatedAt: at})
	benchUsers(t, src, 3)
	buf := make([]byte, 0, 1<<16)
	view := func(s string) string {
		if s == "" {
			return s
		}
		buf = append(buf, s...)
		return unsafe.String(&buf[len(buf)-len(s)], len(s))
	}
	viewPtr := func(p *string) *string {
		if p == nil {
			return nil
		}
		v := view(*p)
		return &v
	}
	var restored []snapfile.Image
	dst := New()
	for _, f := range []projections.ReadModel{projections.ReadModelDeliveries, projections.ReadModelUsers} {
		im, err := src.Image(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for i := range im.Deliveries {
			d := &im.Deliveries[i]
			d.DeliveryID, d.SourceEventID, d.Subject, d.LastError = view(d.DeliveryID), view(d.SourceEventID), view(d.Subject), viewPtr(d.LastError)
			d.Body = []byte(view(string(d.Body)))
		}
		for i := range im.Users {
			u := &im.Users[i]
			u.ChannelUserID, u.Name, u.Nickname, u.Phone, u.Email = view(u.ChannelUserID), view(u.Name), viewPtr(u.Nickname), viewPtr(u.Phone), viewPtr(u.Email)
		}
		for i := range im.Members {
			m := &im.Members[i]
			m.AppUserID, m.Name, m.Phone, m.BirthDate = view(m.AppUserID), view(m.Name), viewPtr(m.Phone), viewPtr(m.BirthDate)
		}
		if err := dst.Restore(ctx, im); err != nil {
			t.Fatal(err)
		}
		restored = append(restored, im)
	}
	for i := range buf {
		buf[i] = 'x'
	}
	for _, f := range []projections.ReadModel{projections.ReadModelDeliveries, projections.ReadModelUsers} {
		want, err := src.Image(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := dst.Image(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s restored from an image whose bytes changed since:\n got %+v\nwant %+v", f, got, want)
		}
	}
	due, err := dst.Due(ctx, at.Add(time.Hour), 10)
	if err != nil || len(due) != 1 || due[0].DeliveryID != "delivery-not-a-uuid" {
		t.Errorf("due after the restore: %+v, %v; want delivery-not-a-uuid", due, err)
	}
	runtime.KeepAlive(restored)
}

// A restore fills the users' tables without the puts' lookups
// (restoreUsers, restoreGroups, restoreMembers): every read by id, by
// channel id, by phone, of a user's groups and of members must answer
// as in the store the image was taken from, users sharing a phone, a
// user's several groups and members, and a deleted member among them.
func TestRestoreUsersAnswersAsTheStoreItWasTakenFrom(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	src := New()
	benchUsers(t, src, 300)
	shared := "13900000000"
	if err := src.Update(ctx, "users", events.Position{Commit: 1000, Prepare: 1000}, func(tx projections.UserTx) error {
		for j := int64(0); j < 5; j++ {
			if err := tx.PutUser(ctx, projections.User{AppID: 7, OpenUserID: 5_000_000 + j, ChannelUserID: fmt.Sprint("shared-", j), Name: "n",
				Phone: &shared, Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at}); err != nil {
				return err
			}
			if err := tx.PutGroup(ctx, projections.Group{AppID: 7, OpenUserID: 5_000_000, FamilyGroupID: 6_000_000 + j, Name: "g", CreatedAt: at, UpdatedAt: at}); err != nil {
				return err
			}
		}
		return tx.DeleteMember(ctx, 1_000_002, at)
	}); err != nil {
		t.Fatal(err)
	}
	im, err := src.Image(ctx, projections.ReadModelUsers)
	if err != nil {
		t.Fatal(err)
	}
	dst := New()
	if err := dst.Restore(ctx, im); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		User, ByChannel, ByPhone projections.User
		Groups                   []projections.Group
		Members                  []projections.Member
		Errs                     [3]string
	}
	ask := func(s *Store, u projections.User) answer {
		var a answer
		var errs [5]error
		a.User, errs[0] = s.User(ctx, u.AppID, u.OpenUserID)
		a.ByChannel, errs[1] = s.UserByChannelID(ctx, u.AppID, u.ChannelUserID)
		if u.Phone != nil {
			a.ByPhone, errs[2] = s.UserByPhone(ctx, u.AppID, *u.Phone)
		}
		a.Groups, errs[3] = s.Groups(ctx, u.AppID, u.OpenUserID)
		a.Members, errs[4] = s.Members(ctx, u.AppID, u.OpenUserID, time.Time{})
		for i, err := range errs[:3] {
			if err != nil {
				a.Errs[i] = err.Error()
			}
		}
		if errs[3] != nil || errs[4] != nil {
			t.Fatalf("user %d: %v, %v", u.OpenUserID, errs[3], errs[4])
		}
		return a
	}
	if len(im.Users) != 305 {
		t.Fatalf("the image holds %d users, want 305", len(im.Users))
	}
	for _, u := range im.Users {
		if got, want := ask(dst, u), ask(src, u); !reflect.DeepEqual(got, want) {
			t.Fatalf("user %d restored answers\n%+v\nwant\n%+v", u.OpenUserID, got, want)
		}
	}
	for _, m := range im.Members {
		got, gotErr := dst.Member(ctx, m.AppID, m.MemberID)
		want, wantErr := src.Member(ctx, m.AppID, m.MemberID)
		if !reflect.DeepEqual(got, want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("member %d restored reads %+v, %v; want %+v, %v", m.MemberID, got, gotErr, want, wantErr)
		}
	}
}

// A restore keeps each delivery's run of attempts as its list (restoreAttempts)
// instead of adding them one by one: the store must answer exactly what
// the adds give, for runs in the image's order and for attempts out of it
// (a delivery's attempts split by another's, an attempt number not above
// the one before), and a later attempt of one delivery must leave the
// lists of the others alone.
func TestRestoreAttemptsAnswerAsTheirAdds(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 23, 12, 0, 0, 123456789, time.FixedZone("CST", 8*3600))
	attempt := func(id string, n int) projections.Attempt {
		code := 500 + n
		return projections.Attempt{DeliveryID: id, Attempt: n, At: at.Add(time.Duration(n) * time.Second), StatusCode: &code, Outcome: "retry"}
	}
	var as []projections.Attempt
	for i := range 20 {
		for n := 1; n <= i%4; n++ {
			as = append(as, attempt(fmt.Sprintf("d%02d", i), n))
		}
	}
	// Out of order: d03 again after others, d90's attempts backwards, d91's twice.
	as = append(as, attempt("d03", 9), attempt("d90", 2), attempt("d90", 1), attempt("d91", 1), attempt("d91", 1))
	want := New()
	if err := want.UpdateDeliveries(ctx, "deliveries", events.Position{Commit: 1, Prepare: 1}, func(tx projections.DeliveryTx) error {
		for _, a := range as {
			if err := tx.AddAttempt(ctx, a); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := New()
	if err := got.Restore(ctx, snapfile.Image{ReadModel: projections.ReadModelDeliveries, Checkpoint: events.Position{Commit: 1, Prepare: 1},
		Attempts: slices.Clone(as)}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.attempts, want.attempts) {
		t.Fatalf("restored attempts:\n%v\nwant:\n%v", got.attempts, want.attempts)
	}
	if n := len(got.attempts["d03"]); n != 4 {
		t.Fatalf("d03 has %d attempts, want 4 (its run and the one after the others)", n)
	}
	before := map[string][]projections.Attempt{}
	for id, l := range got.attempts {
		before[id] = slices.Clone(l)
	}
	if err := got.UpdateDeliveries(ctx, "deliveries", events.Position{Commit: 2, Prepare: 2}, func(tx projections.DeliveryTx) error {
		return tx.AddAttempt(ctx, attempt("d05", 2))
	}); err != nil {
		t.Fatal(err)
	}
	for id, l := range got.attempts {
		if id != "d05" && !reflect.DeepEqual(l, before[id]) {
			t.Errorf("an attempt of d05 changed the attempts of %s", id)
		}
	}
	if n := len(got.attempts["d05"]); n != 2 {
		t.Errorf("d05 has %d attempts after its second, want 2", n)
	}
}

package commands

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
)

// Given a registered user of app 1, when an app's own access to the user's
// report is recorded by RecordOwnAccess and by RecordAccess, then both
// append the same fact to the app's audit stream (subjects: the report, the
// user, then the app the user belongs to), and RecordOwnAccess reads no
// stream to learn the app: one append, nothing else.
func TestRecordOwnAccessAppendsRecordAccessFactWithoutReads(t *testing.T) {
	store := &countingStore{Store: memory.New(), calls: map[string]int{}}
	reg := catalog.Registry()
	users := NewUsers(store, reg, NewAllocator(store, reg, 100), testNames, time.Now, time.UTC).WithLegacyBindings(false)
	res, err := users.Register(ctx, Register{AppID: 1, ChannelUserID: "cu-1", User: UserInput{Name: "Li Lei"}}, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ops := NewOperators(store, reg, NewAllocator(store, reg, 100), func() time.Time { return at })
	fact := func() catalog.AccessAudited {
		return catalog.AccessAudited{Actor: "app:1", Action: catalog.AuditReportPull, AppID: 1, ReportID: 7,
			Subjects: []string{domain.ReportStream(7), domain.UserStream(res.OpenUserID)}}
	}
	store.take()
	if _, err := ops.RecordOwnAccess(ctx, fact(), "req-own"); err != nil {
		t.Fatal(err)
	}
	sameCalls(t, "own access", store.take(), map[string]int{"append audit": 1})
	if _, err := ops.RecordAccess(ctx, fact(), "req-any"); err != nil {
		t.Fatal(err)
	}
	recs, err := store.ReadStream(ctx, domain.AuditStream("app:1"), 0, 10)
	if err != nil || len(recs) != 2 {
		t.Fatalf("audit stream: %d records, %v", len(recs), err)
	}
	var got [2]catalog.AccessAudited
	for i, rec := range recs {
		if err := json.Unmarshal(rec.Data, &got[i]); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{domain.ReportStream(7), domain.UserStream(res.OpenUserID), domain.AppStream(1)}
	if !slices.Equal(got[0].Subjects, want) || !slices.Equal(got[1].Subjects, want) || !got[0].At.Equal(at) {
		t.Fatalf("own access %+v, any access %+v: want subjects %v", got[0], got[1], want)
	}
	if string(recs[0].Data) != string(recs[1].Data) {
		t.Fatalf("the facts differ:\n own %s\n any %s", recs[0].Data, recs[1].Data)
	}
	if _, err := ops.RecordOwnAccess(ctx, catalog.AccessAudited{Actor: "op:1", Action: catalog.AuditReportPull}, ""); err == nil {
		t.Fatal("an access without its app was recorded as an app's own")
	}
}

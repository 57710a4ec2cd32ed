package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/projections"
)

// auditCases are the cases of the audit sub-suite.
var auditCases = []testCase{
	{"AuditFactsNumberedInOrderOnce", testAuditNumbering},
	{"ReplayedAuditFactsAmongNewOnesTakeNoNumber", testAuditReplayAmongNew},
	{"FailedUpdateAddsNoAuditFact", testFailedUpdateAudit},
	{"AuditFactsFilterAndPage", testAuditFilters},
	{"AuditLimits", testAuditLimits},
	{"ErasureIsAnAuditFact", testErasureAuditFact},
}

func auditOf(s Store) readModel[projections.AuditTx] {
	return readModel[projections.AuditTx]{"audit", s.UpdateAudit}
}

// fact is audit fact i by actor about the subjects, i microseconds after base.
func fact(i int, actor string, subjects ...string) projections.AuditFact {
	return projections.AuditFact{
		EventID: fmt.Sprintf("ev-%d", i), Actor: actor, Action: "reveal.history", Subjects: subjects,
		EventIDs: []string{fmt.Sprintf("src-%d", i)}, Reason: fmt.Sprintf("ticket %d", i), At: at(i),
	}
}

func addFacts(t *testing.T, s Store, facts ...projections.AuditFact) {
	t.Helper()
	putRows(t, auditOf(s), projections.AuditTx.AddAuditFact, facts...)
}

func allFacts(t *testing.T, s Store, f projections.AuditFilter) []projections.AuditFact {
	t.Helper()
	f.Limit = 1000
	return must(s.AuditFacts(ctx, f))(t)
}

// testAuditReplayAmongNew: one update adding new facts around ones already
// present (a batch that replays part of what was applied), and one fact
// twice, numbers the new ones after the last, in order, without a gap;
// lists of any text come back as written.
func testAuditReplayAmongNew(t *testing.T, s Store) {
	a, b := fact(1, "operator:1", "user-1"), fact(2, "operator:1", "user-2")
	addFacts(t, s, a, b)
	c, d, e := fact(3, "operator:1", `quote " back \ brace } comma , 中文`, "", "user-3"), fact(4, "app:7"), fact(5, "operator:2", "user-5")
	d.Subjects, d.EventIDs = nil, []string{"src-4a", "src-4b"}
	addFacts(t, s, c, a, d, b, d, e) // a, b replayed; d twice
	a.Seq, b.Seq, c.Seq, d.Seq, e.Seq = 1, 2, 3, 4, 5
	d.Subjects = []string{}
	wantRows(t, "facts", allFacts(t, s, projections.AuditFilter{}), []projections.AuditFact{a, b, c, d, e})
}

// testAuditNumbering: facts come back whole, numbered 1, 2, 3 in the order
// added; a fact added again (a replayed event) is not added twice, so a
// rebuild numbers them the same.
func testAuditNumbering(t *testing.T, s Store) {
	a, b := fact(1, "operator:1", "user-1"), fact(2, "app:7")
	b.Action, b.ReportID, b.AppID, b.Reason, b.EventIDs = "report.pull", 9, 7, "", nil
	b.Subjects = []string{} // lists come back empty, never nil
	addFacts(t, s, a, b)
	addFacts(t, s, a) // replayed
	a.Seq, b.Seq, b.EventIDs = 1, 2, []string{}
	wantRows(t, "facts", allFacts(t, s, projections.AuditFilter{}), []projections.AuditFact{a, b})
	if err := s.ResetReadModel(ctx, projections.ReadModelAudit); err != nil {
		t.Fatal(err)
	}
	if got := allFacts(t, s, projections.AuditFilter{}); len(got) != 0 {
		t.Fatalf("after ResetReadModel: %d facts", len(got))
	}
	addFacts(t, s, fact(1, "operator:1", "user-1"))
	if got := allFacts(t, s, projections.AuditFilter{}); len(got) != 1 || got[0].Seq != 1 {
		t.Errorf("after a rebuild the first fact is %+v, want seq 1", got)
	}
}

func testFailedUpdateAudit(t *testing.T, s Store) {
	failedUpdate(t, s, auditOf(s),
		func(tx projections.AuditTx) error { return tx.AddAuditFact(ctx, fact(1, "operator:1", "user-1")) },
		func(tx projections.AuditTx) error { return tx.AddAuditFact(ctx, fact(2, "operator:1", "user-2")) },
		func(when string) {
			if got := allFacts(t, s, projections.AuditFilter{}); len(got) != 1 || got[0].EventID != "ev-1" {
				t.Errorf("%s: facts %v", when, keys(got))
			}
		})
}

// testAuditFilters: actor, subject (any of the fact's subjects) and the
// time range [From, To) select; every filter pages by Seq.
func testAuditFilters(t *testing.T, s Store) {
	var all []projections.AuditFact
	for i := 1; i <= 12; i++ {
		actor := fmt.Sprintf("operator:%d", i%3)
		f := fact(i, actor, fmt.Sprintf("user-%d", i%4), "report-1")
		if i%5 == 0 {
			f.Action = projections.ErasureAction
		}
		addFacts(t, s, f)
		f.Seq = int64(i)
		all = append(all, f)
	}
	sel := func(keep func(projections.AuditFact) bool) []projections.AuditFact {
		var out []projections.AuditFact
		for _, f := range all {
			if keep(f) {
				out = append(out, f)
			}
		}
		return out
	}
	list := lister(t, s.AuditFacts)
	for _, c := range []struct {
		f    projections.AuditFilter
		keep func(projections.AuditFact) bool
	}{
		{projections.AuditFilter{}, func(projections.AuditFact) bool { return true }},
		{projections.AuditFilter{Actor: "operator:1"}, func(f projections.AuditFact) bool { return f.Actor == "operator:1" }},
		{projections.AuditFilter{Subject: "user-2"}, func(f projections.AuditFact) bool { return f.Subjects[0] == "user-2" }},
		{projections.AuditFilter{Subject: "report-1", Actor: "operator:0"}, func(f projections.AuditFact) bool { return f.Actor == "operator:0" }},
		{projections.AuditFilter{From: at(4), To: at(9)}, func(f projections.AuditFact) bool { return f.Seq >= 4 && f.Seq < 9 }},
		{projections.AuditFilter{Subject: "user-9"}, func(projections.AuditFact) bool { return false }},
		{projections.AuditFilter{Action: projections.ErasureAction}, func(f projections.AuditFact) bool { return f.Seq%5 == 0 }},
		{projections.AuditFilter{Action: "reveal.history", Actor: "operator:1"}, func(f projections.AuditFact) bool { return f.Seq%5 != 0 && f.Actor == "operator:1" }},
		{projections.AuditFilter{Action: "nosuch"}, func(projections.AuditFact) bool { return false }},
	} {
		want := sel(c.keep)
		if got := allFacts(t, s, c.f); !sameKeys(got, want) {
			t.Errorf("%+v = %v, want %v", c.f, keys(got), keys(want))
		}
		if len(want) > 0 {
			wantPaging(t, list, c.f, want)
		}
	}
	wantRows(t, "every fact", allFacts(t, s, projections.AuditFilter{}), all)
}

func sameKeys[R any](got, want []R) bool {
	return fmt.Sprint(keys(got)) == fmt.Sprint(keys(want))
}

func testAuditLimits(t *testing.T, s Store) {
	var all []projections.AuditFact
	write(t, auditOf(s), func(tx projections.AuditTx) error {
		for i := 1; i <= 1001; i++ {
			f := fact(i, "operator:1", "user-1")
			if err := tx.AddAuditFact(ctx, f); err != nil {
				return err
			}
			f.Seq = int64(i)
			all = append(all, f)
		}
		return nil
	})
	wantLimits(t, lister(t, s.AuditFacts), []projections.AuditFilter{{}, {Actor: "operator:1"}}, all)
}

// testErasureAuditFact: the audit projector makes an erasure (user.erased)
// an audit fact (who, whom, when, why), listed in log order among the
// others and found by action, subject and actor; a replay adds nothing.
func testErasureAuditFact(t *testing.T, s Store) {
	p := projections.AuditProjector(s)
	if h, ok := p.(interface{ Handles(string) bool }); !ok || !h.Handles(projections.ErasureAction) {
		t.Fatalf("the audit projector does not handle %s", projections.ErasureAction)
	}
	erasedAt := at(7)
	envs := []events.Envelope{
		{Recorded: events.Recorded{ID: "ev-reveal", Type: "audit.access_recorded", Stream: "audit"},
			Payload:  &catalog.AccessAudited{Actor: "operator:3", Action: "reveal.history", Subjects: []string{"user-1001"}, Reason: "ticket 1", At: at(1)},
			Metadata: events.Metadata{OccurredAt: at(1)}},
		{Recorded: events.Recorded{ID: "ev-erased", Type: projections.ErasureAction, Stream: "user-1001"},
			Payload: &catalog.UserErased{AppID: 7, OpenUserID: 1001, ChannelUserID: "partner-id-of-the-person", Reason: "PIPL request 42",
				ErasedBy: "operator:2", ErasedAt: erasedAt},
			Metadata: events.Metadata{AppID: 7, Actor: "operator:2", OccurredAt: erasedAt.Add(time.Millisecond)}},
	}
	for i := 0; i < 2; i++ { // the second pass is a replay
		if err := p.Apply(ctx, envs, nextPos()); err != nil {
			t.Fatal(err)
		}
	}
	want := projections.AuditFact{Seq: 2, EventID: "ev-erased", Actor: "operator:2", Action: projections.ErasureAction,
		Subjects: []string{"user-1001"}, EventIDs: []string{"ev-erased"}, AppID: 7, Reason: "PIPL request 42", At: erasedAt}
	for _, f := range []projections.AuditFilter{{Action: projections.ErasureAction}, {Actor: "operator:2"}, {Subject: "user-1001", After: 1}} {
		wantRows(t, fmt.Sprintf("facts %+v", f), allFacts(t, s, f), []projections.AuditFact{want})
	}
	if got := allFacts(t, s, projections.AuditFilter{}); len(got) != 2 {
		t.Fatalf("facts %v, want the reveal and the erasure once each", keys(got))
	}
	if got := allFacts(t, s, projections.AuditFilter{Subject: "user-1001"}); len(got) != 2 {
		t.Fatalf("facts about user-1001 %v, want the reveal and the erasure", keys(got))
	}
	// The app's acknowledgement is a fact of its own, found by app and action.
	ackAt := at(9)
	ack := []events.Envelope{{Recorded: events.Recorded{ID: "ev-ack", Type: projections.ErasureAcknowledgedAction, Stream: "user-1001"},
		Payload:  &catalog.ErasureAcknowledged{AppID: 7, OpenUserID: 1001, AcknowledgedBy: "app:7", AcknowledgedAt: ackAt},
		Metadata: events.Metadata{AppID: 7, Actor: "app:7", OccurredAt: ackAt}}}
	for i := 0; i < 2; i++ {
		if err := p.Apply(ctx, ack, nextPos()); err != nil {
			t.Fatal(err)
		}
	}
	wantAck := projections.AuditFact{Seq: 3, EventID: "ev-ack", Actor: "app:7", Action: projections.ErasureAcknowledgedAction,
		Subjects: []string{"user-1001"}, EventIDs: []string{"ev-ack"}, AppID: 7, Reason: "", At: ackAt}
	wantRows(t, "acknowledgements of app 7", allFacts(t, s, projections.AuditFilter{App: 7, Action: projections.ErasureAcknowledgedAction}), []projections.AuditFact{wantAck})
	wantRows(t, "facts of app 7", allFacts(t, s, projections.AuditFilter{App: 7}), []projections.AuditFact{want, wantAck})
	if got := allFacts(t, s, projections.AuditFilter{App: 8}); len(got) != 0 {
		t.Fatalf("facts of app 8 %v, want none", keys(got))
	}
}

package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// deliveryCases are the cases of the deliveries sub-suite.
var deliveryCases = []testCase{
	{"DeliveryRoundTrip", testDeliveryRoundTrip},
	{"PutDeliveryReplacesAllFields", testPutDeliveryReplaces},
	{"DeliveryTenancy", testDeliveryTenancy},
	{"DeliveriesFilters", testDeliveriesFilters},
	{"DeliveriesCursorPaging", testDeliveriesPaging},
	{"DeliveriesNewestFirst", testDeliveriesNewestFirst},
	{"DeliveriesLimits", testDeliveriesLimits},
	{"DueOrderAndBound", testDue},
	{"NextDue", testNextDue},
	{"CountByStatus", testCountByStatus},
	{"LastSource", testLastSource},
	{"AttemptsOrderAndUpsert", testAttempts},
	{"ErrorClassesRoundTrip", testErrorClasses},
	{"DeliveryTxReadsSeeOwnWrites", testDeliveryTxReads},
	{"FailedUpdateDeliveriesChangesNothing", testFailedUpdateDeliveries},
	{"UpdateDeliveryStateKeepsTheRestOfTheRow", testUpdateDeliveryState},
	{"DeliveryCheckpointsAreUpdateCheckpoints", testDeliveryCheckpoints},
	{"ResetEmptiesDeliveries", testResetDeliveries},
	{"ConcurrentDeliveryUpdates", testConcurrentDeliveries},
	{"DeliveriesMatchModel", testDeliveriesModel},
	{"EndpointsAndFeedFilters", testEndpointFilters},
	{"ResponseExcerptsAndTheirErasure", testResponseExcerpts},
}

// The delivery cases of Run. Every read-model store is also the delivery
// store, so a store without Store fails them.

// ---- delivery fixtures ----

// allStatuses lists every delivery status, for fixtures that cycle through them.
var allStatuses = []string{
	domain.DeliveryPending, domain.DeliveryRetrying, domain.DeliveryDelivered,
	domain.DeliveryAbandoned, domain.DeliveryDeadLetter, domain.DeliverySkipped,
}

// cursorAt is the n-th cursor of a fixture: ascending in n, several per
// commit (so Prepare orders within a commit), crossing 2^63 at n = 12.
func cursorAt(n int) events.Position {
	return events.Position{Commit: 1<<63 - 4 + uint64(n/3), Prepare: uint64(n % 3)}
}

// sourceAt is the n-th source position: always before cursorAt(n), as the
// source event precedes the delivery it causes.
func sourceAt(n int) events.Position {
	c := cursorAt(n)
	return events.Position{Commit: c.Commit - 1, Prepare: c.Prepare}
}

// dlv is delivery n of app: a pending delivery due at(1000+n), created at(10n).
func dlv(app int64, n int) projections.Delivery {
	return projections.Delivery{
		DeliveryID:     fmt.Sprintf("d-%04d", n),
		AppID:          app,
		EventType:      "user.registered",
		SourceEventID:  fmt.Sprintf("evt-%04d", n),
		SourcePosition: sourceAt(n),
		Cursor:         cursorAt(n),
		Body:           fmt.Appendf(nil, `{"event":"user.registered","n":%d}`, n),
		Status:         domain.DeliveryPending,
		NextAttemptAt:  ptr(at(1000 + n)),
		CreatedAt:      at(10 * n),
		UpdatedAt:      at(10*n + 1),
	}
}

// ---- delivery helpers ----

func putDeliveries(t *testing.T, s Store, rows ...projections.Delivery) {
	t.Helper()
	putRows(t, deliveriesOf(s), projections.DeliveryTx.PutDelivery, rows...)
}

func addAttempts(t *testing.T, s Store, as ...projections.Attempt) {
	t.Helper()
	putRows(t, deliveriesOf(s), projections.DeliveryTx.AddAttempt, as...)
}

func getDelivery(t *testing.T, s Store, app int64, id string) (projections.Delivery, []projections.Attempt) {
	t.Helper()
	d, as, err := s.Delivery(ctx, app, id)
	if err != nil {
		t.Fatalf("Delivery(%d, %q): %v", app, id, err)
	}
	return d, as
}

func wantNextDue(t *testing.T, s Store, want time.Time, wantOK bool) {
	t.Helper()
	got, ok, err := s.NextDue(ctx)
	if err != nil || ok != wantOK || (ok && !sameTime(got, want)) || (!ok && !got.IsZero()) {
		t.Errorf("NextDue = %v, %v, %v; want %v, %v", got, ok, err, want, wantOK)
	}
}

func wantCounts(t *testing.T, s Store, want map[string]int) {
	t.Helper()
	if got := must(s.CountByStatus(ctx))(t); !maps.Equal(got, want) {
		t.Errorf("CountByStatus = %v, want %v", got, want)
	}
}

func wantLastSource(t *testing.T, s Store, want events.Position) {
	t.Helper()
	if got := must(s.LastSource(ctx))(t); got != want {
		t.Errorf("LastSource = %v, want %v", got, want)
	}
}

// ---- the reference model ----

// model is what a delivery store must answer, computed the obvious way; the
// filter, paging and randomized cases compare both stores against it.
type model struct {
	deliveries map[string]projections.Delivery
	attempts   map[string][]projections.Attempt
}

func newModel() *model {
	return &model{deliveries: map[string]projections.Delivery{}, attempts: map[string][]projections.Attempt{}}
}

func (m *model) put(rows ...projections.Delivery) {
	for _, d := range rows {
		m.deliveries[d.DeliveryID] = d
	}
}

func (m *model) addAttempt(a projections.Attempt) {
	as := slices.DeleteFunc(slices.Clone(m.attempts[a.DeliveryID]), func(x projections.Attempt) bool { return x.Attempt == a.Attempt })
	as = append(as, a)
	slices.SortFunc(as, func(x, y projections.Attempt) int { return cmp.Compare(x.Attempt, y.Attempt) })
	m.attempts[a.DeliveryID] = as
}

func (m *model) clone() *model {
	return &model{deliveries: maps.Clone(m.deliveries), attempts: maps.Clone(m.attempts)}
}

func comparePositions(a, b events.Position) int {
	switch {
	case a.Less(b):
		return -1
	case b.Less(a):
		return 1
	}
	return 0
}

func feedOrder(a, b projections.Delivery) int {
	if c := comparePositions(a.Cursor, b.Cursor); c != 0 {
		return c
	}
	return strings.Compare(a.DeliveryID, b.DeliveryID)
}

func limitOf(n, def, max int) int {
	switch {
	case n <= 0:
		return def
	case max > 0 && n > max:
		return max
	}
	return n
}

func (m *model) list(f domain.DeliveryFilter) []projections.Delivery {
	var out []projections.Delivery
	for _, d := range m.deliveries {
		switch {
		case !d.Matches(f):
			continue
		case f.Newest && f.Before != (events.Position{}) && !d.Cursor.Less(f.Before):
			continue
		case !f.Newest && !f.After.Less(d.Cursor):
			continue
		}
		out = append(out, d)
	}
	slices.SortFunc(out, feedOrder)
	if f.Newest {
		slices.Reverse(out)
	}
	return out[:min(len(out), limitOf(f.Limit, 100, 1000))]
}

func queued(d projections.Delivery) bool {
	return d.NextAttemptAt != nil &&
		(d.Status == domain.DeliveryPending || d.Status == domain.DeliveryRetrying)
}

func (m *model) due(now time.Time, limit int) []projections.Delivery {
	var out []projections.Delivery
	for _, d := range m.deliveries {
		if queued(d) && !d.NextAttemptAt.After(now) {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b projections.Delivery) int {
		if c := a.NextAttemptAt.Compare(*b.NextAttemptAt); c != 0 {
			return c
		}
		return feedOrder(a, b)
	})
	return out[:min(len(out), limitOf(limit, 100, 0))]
}

func (m *model) nextDue() (time.Time, bool) {
	var next time.Time
	ok := false
	for _, d := range m.deliveries {
		if queued(d) && (!ok || d.NextAttemptAt.Before(next)) {
			next, ok = *d.NextAttemptAt, true
		}
	}
	return next, ok
}

func (m *model) counts() map[string]int {
	c := map[string]int{}
	for _, d := range m.deliveries {
		c[d.Status]++
	}
	return c
}

func (m *model) lastSource() events.Position {
	var p events.Position
	for _, d := range m.deliveries {
		if p.Less(d.SourcePosition) {
			p = d.SourcePosition
		}
	}
	return p
}

// check compares every read of s with the model.
func (m *model) check(t *testing.T, s Store, what string, apps []int64, nows []time.Time) {
	t.Helper()
	for _, app := range append([]int64{0}, apps...) {
		f := domain.DeliveryFilter{AppID: app, Limit: 1000}
		wantRows(t, fmt.Sprintf("%s: Deliveries(app %d)", what, app), must(s.Deliveries(ctx, f))(t), m.list(f))
	}
	for _, now := range nows {
		wantRows(t, fmt.Sprintf("%s: Due(%v)", what, now), must(s.Due(ctx, now, 1000))(t), dueOf(m.due(now, 1000)...))
	}
	next, ok := m.nextDue()
	wantNextDue(t, s, next, ok)
	wantCounts(t, s, m.counts())
	wantLastSource(t, s, m.lastSource())
	for id, d := range m.deliveries {
		got, as := getDelivery(t, s, d.AppID, id)
		wantRow(t, fmt.Sprintf("%s: Delivery(%q)", what, id), got, d)
		wantRows(t, fmt.Sprintf("%s: attempts of %q", what, id), as, m.attempts[id])
	}
}

// ---- cases ----

// roundTripDeliveries are the round trip's deliveries: full sets every
// field to awkward values (a 64 KiB body of every byte value, extreme
// positions, non-ASCII text), bare leaves every pointer nil and has no
// body, zeroes sets zero values (not nil).
func roundTripDeliveries() (full, bare, zeroes projections.Delivery) {
	body := make([]byte, 64<<10) // every byte value, NULs and invalid UTF-8 included
	for i := range body {
		body[i] = byte(i*7 + i/256)
	}
	full = projections.Delivery{
		DeliveryID:     "dlv-渠道-🙂-" + strings.Repeat("x", 64),
		AppID:          1 << 40,
		EventType:      "user.family_member.deleted",
		SourceEventID:  "0190f1e2-7c3a-7d4e-9f00-0123456789ab",
		SourcePosition: events.Position{Commit: 1<<63 + 5, Prepare: 1<<63 + 3},
		Cursor:         events.Position{Commit: ^uint64(0), Prepare: ^uint64(0) - 1},
		Body:           body,
		Status:         domain.DeliveryRetrying,
		Attempts:       3,
		NextAttemptAt:  ptr(time.Date(2030, 1, 2, 3, 4, 5, 999999000, time.FixedZone("CST", 8*3600))),
		LastStatus:     ptr(503),
		LastError:      ptr("connection reset — 连接重置\n\ttail"), // text: no NUL in Postgres
		CreatedAt:      time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		UpdatedAt:      time.Date(2038, 1, 19, 3, 14, 8, 1000, time.FixedZone("X", -7*3600)),
	}
	bare = projections.Delivery{
		DeliveryID: "b",
		AppID:      -3,
		Cursor:     events.Position{Prepare: 1},
		Body:       nil, // reads back empty
		LastStatus: nil,
		CreatedAt:  at(0),
		UpdatedAt:  at(0),
	}
	zeroes = projections.Delivery{
		DeliveryID:    "z",
		AppID:         -3,
		Cursor:        events.Position{Commit: 1},
		Body:          []byte{},
		Status:        domain.DeliveryPending,
		NextAttemptAt: ptr(at(0)),
		LastStatus:    ptr(0), // zero is set, not nil
		LastError:     ptr(""),
		CreatedAt:     at(0),
		UpdatedAt:     at(0),
	}
	return full, bare, zeroes
}

// testDeliveryRoundTrip: given the round trip's deliveries written in one
// transaction by a caller that reuses its buffers once PutDelivery
// returns, every read (by id, by app, due) answers them field for field
// with no attempts, and the store keeps its own copies of what it read
// and wrote.
func testDeliveryRoundTrip(t *testing.T, s Store) {
	full, bare, zeroes := roundTripDeliveries()

	write(t, deliveriesOf(s), func(tx projections.DeliveryTx) error {
		// The caller may reuse its buffers once PutDelivery returns.
		d := full
		d.Body, d.LastError = slices.Clone(full.Body), ptr(*full.LastError)
		if err := tx.PutDelivery(ctx, d); err != nil {
			return err
		}
		d.Body[0] ^= 0xff
		*d.LastError = "reused"
		if err := tx.PutDelivery(ctx, bare); err != nil {
			return err
		}
		return tx.PutDelivery(ctx, zeroes)
	})

	t.Run("ReadsAnswerEveryField", func(t *testing.T) {
		for _, want := range []projections.Delivery{full, bare, zeroes} {
			got, as := getDelivery(t, s, want.AppID, want.DeliveryID)
			wantRow(t, fmt.Sprintf("Delivery(%q)", want.DeliveryID), got, want)
			if len(as) != 0 {
				t.Errorf("attempts of %q = %+v, want none", want.DeliveryID, as)
			}
			got, _ = getDelivery(t, s, 0, want.DeliveryID)
			wantRow(t, fmt.Sprintf("Delivery(0, %q)", want.DeliveryID), got, want)
		}
		wantRows(t, "Deliveries(app -3)", must(s.Deliveries(ctx, domain.DeliveryFilter{AppID: -3}))(t),
			[]projections.Delivery{bare, zeroes})

		wantRows(t, "Deliveries(every app)", must(s.Deliveries(ctx, domain.DeliveryFilter{}))(t),
			[]projections.Delivery{bare, zeroes, full})

		// A list whose caller reads no body has every other field; a
		// store may leave the bodies out.
		noBodies := func(ds []projections.Delivery) []projections.Delivery {
			for i := range ds {
				ds[i].Body = nil
			}
			return ds
		}
		wantRows(t, "Deliveries(every app, without bodies)",
			noBodies(must(s.Deliveries(ctx, domain.DeliveryFilter{WithoutBodies: true}))(t)),
			noBodies([]projections.Delivery{bare, zeroes, full}))

		wantRows(t, "Due", must(s.Due(ctx, time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC), 10))(t),
			dueOf(zeroes, full))
	})
	t.Run("TxReadIsACopy", func(t *testing.T) {
		// Inside a transaction too.
		write(t, deliveriesOf(s), func(tx projections.DeliveryTx) error {
			got, err := tx.Delivery(ctx, full.DeliveryID)
			if err != nil {
				return err
			}
			wantRow(t, "Tx.Delivery", got, full)
			got.Body[1] ^= 0xff
			*got.LastStatus = 200
			return nil
		})
	})
	t.Run("ReadResultsAreCopies", func(t *testing.T) {
		// The store owns its copies: changing what was read changes nothing.
		got, _ := getDelivery(t, s, full.AppID, full.DeliveryID)
		got.Body[2] ^= 0xff
		*got.LastError, *got.NextAttemptAt, *got.LastStatus = "mutated", at(1), 1
		for _, l := range [][]projections.Delivery{
			must(s.Deliveries(ctx, domain.DeliveryFilter{AppID: full.AppID}))(t),
		} {
			for _, d := range l {
				if len(d.Body) > 0 {
					d.Body[0] ^= 0xff
				}
				if d.LastError != nil {
					*d.LastError = "mutated"
				}
			}
		}
		got, _ = getDelivery(t, s, full.AppID, full.DeliveryID)
		wantRow(t, "Delivery after callers mutated results", got, full)
	})
}

func testPutDeliveryReplaces(t *testing.T, s Store) {
	old := dlv(1, 20)
	old.Status, old.Attempts, old.LastStatus, old.LastError = domain.DeliveryRetrying, 2, ptr(500), ptr("boom")
	other := dlv(1, 10)
	putDeliveries(t, s, old, other)
	wantLastSource(t, s, old.SourcePosition)

	// Every field changes, the pointers back to nil; the delivery moves to
	// another app, back in the feed, and out of the due queue.
	repl := projections.Delivery{
		DeliveryID:     old.DeliveryID,
		AppID:          2,
		EventType:      "user.profile.updated",
		SourceEventID:  "evt-other",
		SourcePosition: sourceAt(5),
		Cursor:         cursorAt(5),
		Body:           []byte("{}"),
		Status:         domain.DeliveryDelivered,
		Attempts:       3,
		CreatedAt:      at(7),
		UpdatedAt:      at(8),
	}
	putDeliveries(t, s, repl)

	got, _ := getDelivery(t, s, 2, repl.DeliveryID)
	wantRow(t, "replaced delivery", got, repl)
	_, _, err := s.Delivery(context.Background(), 1, repl.DeliveryID)
	wantNotFound(t, "Delivery in the old app after replace", err)
	wantIDs(t, "Deliveries(app 1)", must(s.Deliveries(ctx, domain.DeliveryFilter{AppID: 1}))(t), []string{other.DeliveryID})
	wantIDs(t, "Deliveries(app 2)", must(s.Deliveries(ctx, domain.DeliveryFilter{AppID: 2}))(t), []string{repl.DeliveryID})
	wantIDs(t, "Deliveries(every app)", must(s.Deliveries(ctx, domain.DeliveryFilter{}))(t),
		[]string{repl.DeliveryID, other.DeliveryID})
	wantIDs(t, "Due", must(s.Due(ctx, at(1_000_000), 0))(t), []string{other.DeliveryID})
	wantNextDue(t, s, *other.NextAttemptAt, true)
	wantCounts(t, s, map[string]int{domain.DeliveryPending: 1, domain.DeliveryDelivered: 1})
	wantLastSource(t, s, other.SourcePosition) // the highest source went with the old row

	// Putting the same row again changes nothing.
	putDeliveries(t, s, repl, repl)
	wantCounts(t, s, map[string]int{domain.DeliveryPending: 1, domain.DeliveryDelivered: 1})
	wantIDs(t, "Deliveries after identical put", must(s.Deliveries(ctx, domain.DeliveryFilter{}))(t),
		[]string{repl.DeliveryID, other.DeliveryID})
}

func testDeliveryTenancy(t *testing.T, s Store) {
	d1, d2 := dlv(1, 1), dlv(2, 2)
	putDeliveries(t, s, d1, d2)
	addAttempts(t, s, projections.Attempt{DeliveryID: d1.DeliveryID, Attempt: 1, At: at(5), Outcome: "retry"})

	got, as := getDelivery(t, s, 1, d1.DeliveryID)
	wantRow(t, "Delivery(1, d1)", got, d1)
	if len(as) != 1 {
		t.Errorf("attempts of d1 = %+v, want one", as)
	}
	got, _ = getDelivery(t, s, 0, d2.DeliveryID)
	wantRow(t, "Delivery(0, d2)", got, d2)

	for _, c := range []struct {
		app int64
		id  string
	}{
		{2, d1.DeliveryID}, // another app's
		{1, d2.DeliveryID},
		{3, d1.DeliveryID}, // an unknown app
		{1, "unknown"},
		{0, "unknown"},
		{1, strings.ToUpper(d1.DeliveryID)}, // ids are case-sensitive
		{1, ""},
	} {
		d, as, err := s.Delivery(ctx, c.app, c.id)
		wantNotFound(t, fmt.Sprintf("Delivery(%d, %q)", c.app, c.id), err)
		if err != nil && (d.DeliveryID != "" || len(as) != 0) {
			t.Errorf("Delivery(%d, %q) returned data with its error: %+v, %+v", c.app, c.id, d, as)
		}
	}
	wantIDs(t, "Deliveries(app 2)", must(s.Deliveries(ctx, domain.DeliveryFilter{AppID: 2}))(t), []string{d2.DeliveryID})
	wantIDs(t, "Deliveries(app 3)", must(s.Deliveries(ctx, domain.DeliveryFilter{AppID: 3}))(t), nil)
}

// filterFixture puts 36 deliveries over three apps, every status and three
// event types, in an order unlike their cursors', and returns the model.
func filterFixture(t *testing.T, s Store) *model {
	t.Helper()
	m := newModel()
	types := []string{"user.registered", "user.profile.updated", "user.family_member.added"}
	var dls []projections.Delivery
	for n := range 36 {
		d := dlv(int64(1+n%3), n)
		d.Status = allStatuses[(n/3)%len(allStatuses)]
		d.EventType = types[(n/2)%len(types)]
		d.EndpointID = int64(n % 4 / 2 * (40 + n%2)) // 0, 0, 40, 41, ...
		if n%7 == 6 {
			d.EventType = domain.TestEvent
		}
		dls = append(dls, d)
	}
	// Written newest first, in two transactions, so the feed is not built by appends.
	slices.Reverse(dls)
	putDeliveries(t, s, dls[:20]...)
	putDeliveries(t, s, dls[20:]...)
	m.put(dls...)
	return m
}

func testDeliveriesFilters(t *testing.T, s Store) {
	m := filterFixture(t, s)
	cst := time.FixedZone("CST", 8*3600)
	filters := []domain.DeliveryFilter{
		{},
		{AppID: 1},
		{AppID: 2},
		{AppID: 99},
		{Status: domain.DeliveryDelivered},
		{Status: domain.DeliverySkipped},
		{Status: "no-such-status"},
		{EventType: "user.profile.updated"},
		{EventType: "user.profile"}, // exact, not a prefix
		{From: at(100)},
		{To: at(100)},
		{From: at(100), To: at(200)},
		{From: at(100).In(cst), To: at(200).In(cst)},
		{From: at(101), To: at(199)},
		{From: at(200), To: at(200)},
		{From: at(300), To: at(100)},
		{After: cursorAt(11)},
		{After: cursorAt(12)},
		{After: cursorAt(35)},
		{After: events.Position{Commit: 1 << 63}},
		{Limit: 5},
		{AppID: 1, Status: domain.DeliveryPending},
		{AppID: 2, EventType: "user.registered"},
		{AppID: 3, From: at(50), To: at(250)},
		{Status: domain.DeliveryRetrying, EventType: "user.family_member.added"},
		{AppID: 1, Status: domain.DeliveryAbandoned, EventType: "user.family_member.added", From: at(0), To: at(400), After: cursorAt(0)},
		{AppID: 2, After: cursorAt(14), Limit: 2},
		{AppID: 3, Status: domain.DeliveryDeadLetter, Limit: 1},
	}
	for _, f := range filters {
		wantRows(t, fmt.Sprintf("Deliveries(%+v)", f), must(s.Deliveries(ctx, f))(t), m.list(f))
	}

	// The model itself, on cases worked out by hand.
	wantIDs(t, "app 1, pending", must(s.Deliveries(ctx, domain.DeliveryFilter{AppID: 1, Status: domain.DeliveryPending}))(t),
		[]string{"d-0000", "d-0018"})
	wantIDs(t, "bounds [at(100), at(130))", must(s.Deliveries(ctx, domain.DeliveryFilter{From: at(100), To: at(130)}))(t),
		[]string{"d-0010", "d-0011", "d-0012"})
	wantIDs(t, "after the 2^63 boundary", must(s.Deliveries(ctx, domain.DeliveryFilter{After: cursorAt(11), Limit: 2}))(t),
		[]string{"d-0012", "d-0013"})
	wantIDs(t, "app 2 after d-0004", must(s.Deliveries(ctx, domain.DeliveryFilter{AppID: 2, After: cursorAt(4), Limit: 3}))(t),
		[]string{"d-0007", "d-0010", "d-0013"})
}

func testDeliveriesPaging(t *testing.T, s Store) {
	m := filterFixture(t, s)
	for _, f := range []domain.DeliveryFilter{
		{},
		{AppID: 1},
		{Status: domain.DeliveryPending},
		{AppID: 2, EventType: "user.registered"},
		{From: at(55), To: at(305)},
	} {
		all := f
		all.Limit = 1000
		wantPaging(t, lister(t, s.Deliveries), f, m.list(all))
	}
}

// testDeliveriesNewestFirst: the portal's log order, newest first, with
// every filter, paged towards older rows with Before (After is ignored).
func testDeliveriesNewestFirst(t *testing.T, s Store) {
	m := filterFixture(t, s)
	for _, f := range []domain.DeliveryFilter{
		{Newest: true},
		{Newest: true, AppID: 1},
		{Newest: true, Status: domain.DeliveryPending},
		{Newest: true, AppID: 2, EventType: "user.registered"},
		{Newest: true, From: at(55), To: at(305)},
		{Newest: true, Feed: true, AppID: 3},
		{Newest: true, Before: cursorAt(20)},
		{Newest: true, Before: cursorAt(12)}, // the 2^63 boundary below
		{Newest: true, Before: cursorAt(0)},
		{Newest: true, After: cursorAt(30)},
		{Newest: true, AppID: 2, Before: cursorAt(14), Limit: 2},
	} {
		wantRows(t, fmt.Sprintf("Deliveries(%+v)", f), must(s.Deliveries(ctx, f))(t), m.list(f))
		if f.Before != (events.Position{}) || f.Limit != 0 {
			continue
		}
		all := f
		all.Limit = 1000
		want := m.list(all)
		for _, limit := range []int{1, 2, 3, 7} {
			var got []projections.Delivery
			page := f
			page.Limit = limit
			for range len(want) + 2 {
				l := must(s.Deliveries(ctx, page))(t)
				if len(l) == 0 {
					break
				}
				for _, d := range l {
					if page.Before != (events.Position{}) && !d.Cursor.Less(page.Before) {
						t.Fatalf("%+v: %s at %v is not before the cursor", page, d.DeliveryID, d.Cursor)
					}
				}
				got = append(got, l...)
				page.Before = l[len(l)-1].Cursor
			}
			wantRows(t, fmt.Sprintf("%+v paged by %d", f, limit), got, want)
		}
	}
	wantIDs(t, "newest two of app 2 below d-0014", must(s.Deliveries(ctx, domain.DeliveryFilter{Newest: true, AppID: 2, Before: cursorAt(14), Limit: 2}))(t),
		[]string{"d-0013", "d-0010"})
}

func testDeliveriesLimits(t *testing.T, s Store) {
	const n = 1005
	dls := make([]projections.Delivery, n)
	for i := range dls {
		dls[i] = dlv(7, i)
		dls[i].Body = []byte("{}")
	}
	putDeliveries(t, s, dls...)
	wantLimits(t, lister(t, s.Deliveries), []domain.DeliveryFilter{{AppID: 7}}, dls)
	for _, c := range []struct{ limit, want int }{{0, 100}, {-1, 100}, {7, 7}} {
		if got := must(s.Due(ctx, at(1_000_000), c.limit))(t); len(got) != c.want || got[0].DeliveryID != "d-0000" {
			t.Errorf("Due(limit %d) = %d deliveries, want the first %d", c.limit, len(got), c.want)
		}
	}
}

func testDue(t *testing.T, s Store) {
	mk := func(app int64, n int, status string, next *time.Time) projections.Delivery {
		d := dlv(app, n)
		d.Status, d.NextAttemptAt = status, next
		return d
	}
	a := mk(1, 5, domain.DeliveryPending, ptr(at(100)))
	b := mk(1, 9, domain.DeliveryRetrying, ptr(at(50)))
	c := mk(1, 2, domain.DeliveryPending, ptr(at(100))) // same time as a, earlier cursor
	d := mk(1, 3, domain.DeliveryRetrying, ptr(at(200)))
	k := mk(2, 7, domain.DeliveryPending, ptr(at(60))) // Due spans apps
	putDeliveries(t, s, a, b, c, d, k,
		mk(1, 10, domain.DeliveryDelivered, ptr(at(10))),
		mk(1, 11, domain.DeliveryAbandoned, ptr(at(10))),
		mk(1, 12, domain.DeliveryDeadLetter, ptr(at(10))),
		mk(1, 13, domain.DeliverySkipped, ptr(at(10))),
		mk(1, 14, domain.DeliveryPending, nil),
		mk(1, 15, domain.DeliveryRetrying, nil),
	)
	idsOf := func(ds ...projections.Delivery) []string { return strIDs(ds) }
	for _, c := range []struct {
		now   time.Time
		limit int
		want  []string
	}{
		{at(100), 10, idsOf(b, k, c, a)}, // NextAttemptAt == now is due
		{at(100).In(time.FixedZone("CST", 8*3600)), 10, idsOf(b, k, c, a)},
		{at(99), 10, idsOf(b, k)},
		{at(49), 10, nil},
		{at(1000), 10, idsOf(b, k, c, a, d)},
		{at(1000), 2, idsOf(b, k)},
		{at(1000), 0, idsOf(b, k, c, a, d)},
		{at(1000), -1, idsOf(b, k, c, a, d)},
		{time.Time{}, 10, nil},
	} {
		wantIDs(t, fmt.Sprintf("Due(%v, %d)", c.now, c.limit), must(s.Due(ctx, c.now, c.limit))(t), c.want)
	}
	wantRows(t, "Due rows", must(s.Due(ctx, at(60), 10))(t), dueOf(b, k))
	// Apps the dispatcher cannot send to now are left out, and the limit
	// counts only what is returned.
	wantIDs(t, "Due skipping app 1", must(s.Due(ctx, at(1000), 10, 1))(t), idsOf(k))
	wantIDs(t, "Due skipping app 2", must(s.Due(ctx, at(1000), 2, 2))(t), idsOf(b, c))
	wantIDs(t, "Due skipping both", must(s.Due(ctx, at(1000), 10, 2, 1))(t), nil)
	wantIDs(t, "Due skipping an app without deliveries", must(s.Due(ctx, at(1000), 10, 99))(t), idsOf(b, k, c, a, d))
	// Many apps skipped at once (many tenants' breakers open) leave out
	// exactly the named ones.
	many := []int64{1}
	for id := int64(100); id < 140; id++ {
		many = append(many, id)
	}
	wantIDs(t, "Due skipping app 1 among 41 apps", must(s.Due(ctx, at(1000), 10, many...))(t), idsOf(k))
	wantIDs(t, "Due skipping 41 apps, none with deliveries", must(s.Due(ctx, at(1000), 10, many[1:]...))(t), idsOf(b, k, c, a, d))
	wantIDs(t, "Due skipping both among 42 apps", must(s.Due(ctx, at(1000), 10, append(many, 2)...))(t), nil)

	// Attempting moves deliveries out of the queue or later in it.
	b2 := b
	b2.Status, b2.NextAttemptAt, b2.Attempts = domain.DeliveryDelivered, nil, 1
	a2 := a
	a2.Status, a2.NextAttemptAt, a2.Attempts = domain.DeliveryRetrying, ptr(at(300)), 1
	putDeliveries(t, s, b2, a2)
	wantIDs(t, "Due after attempts", must(s.Due(ctx, at(1000), 10))(t), idsOf(k, c, d, a2))
	wantIDs(t, "Due(at(100)) after attempts", must(s.Due(ctx, at(100), 10))(t), idsOf(k, c))

	// A resend brings a finished delivery back.
	b3 := b2
	b3.Status, b3.NextAttemptAt = domain.DeliveryPending, ptr(at(1))
	putDeliveries(t, s, b3)
	wantIDs(t, "Due after resend", must(s.Due(ctx, at(100), 10))(t), idsOf(b3, k, c))
}

func testNextDue(t *testing.T, s Store) {
	wantNextDue(t, s, time.Time{}, false)
	done := dlv(1, 1)
	done.Status, done.NextAttemptAt = domain.DeliveryDelivered, ptr(at(1))
	skipped := dlv(1, 2)
	skipped.Status, skipped.NextAttemptAt = domain.DeliverySkipped, ptr(at(2))
	unscheduled := dlv(1, 3)
	unscheduled.NextAttemptAt = nil
	putDeliveries(t, s, done, skipped, unscheduled)
	wantNextDue(t, s, time.Time{}, false)

	p := dlv(1, 4)
	p.NextAttemptAt = ptr(at(50))
	r := dlv(2, 5)
	r.Status, r.NextAttemptAt = domain.DeliveryRetrying, ptr(at(20).In(time.FixedZone("CST", 8*3600)))
	putDeliveries(t, s, p, r)
	wantNextDue(t, s, at(20), true)

	r.Status, r.NextAttemptAt = domain.DeliveryAbandoned, nil
	putDeliveries(t, s, r)
	wantNextDue(t, s, at(50), true)

	p.NextAttemptAt = ptr(at(70))
	putDeliveries(t, s, p)
	wantNextDue(t, s, at(70), true)

	p.Status = domain.DeliveryDelivered
	putDeliveries(t, s, p)
	wantNextDue(t, s, time.Time{}, false)
}

func testCountByStatus(t *testing.T, s Store) {
	wantCounts(t, s, map[string]int{})
	var dls []projections.Delivery
	for n := range 10 {
		d := dlv(int64(1+n%2), n)
		d.Status = allStatuses[n%4] // pending, retrying, delivered, abandoned
		dls = append(dls, d)
	}
	putDeliveries(t, s, dls...)
	wantCounts(t, s, map[string]int{
		domain.DeliveryPending: 3, domain.DeliveryRetrying: 3,
		domain.DeliveryDelivered: 2, domain.DeliveryAbandoned: 2,
	})

	// Statuses move; a status left with no delivery is not listed.
	dls[0].Status, dls[4].Status, dls[8].Status = domain.DeliveryDeadLetter, domain.DeliveryDelivered, domain.DeliveryDelivered
	putDeliveries(t, s, dls[0], dls[4], dls[8])
	wantCounts(t, s, map[string]int{
		domain.DeliveryRetrying: 3, domain.DeliveryDelivered: 4,
		domain.DeliveryAbandoned: 2, domain.DeliveryDeadLetter: 1,
	})
}

func testLastSource(t *testing.T, s Store) {
	wantLastSource(t, s, events.Position{})
	mk := func(n int, src events.Position) projections.Delivery {
		d := dlv(int64(1+n%2), n)
		d.SourcePosition = src
		return d
	}
	top := events.Position{Commit: 1<<63 + 1, Prepare: 2}
	dls := []projections.Delivery{
		mk(1, events.Position{Commit: 5, Prepare: 9}),
		mk(2, events.Position{Commit: 7, Prepare: 100}),
		mk(3, top), // ordered by Commit, then Prepare, as uint64s
		mk(4, events.Position{Commit: 1<<63 + 1, Prepare: 0}),
		mk(5, events.Position{Commit: 1 << 63, Prepare: ^uint64(0)}),
		mk(6, events.Position{Commit: 1<<63 - 1, Prepare: 7}),
	}
	putDeliveries(t, s, dls...)
	wantLastSource(t, s, top)

	// A failed update leaves it; a committed one moves it, even down.
	err := s.UpdateDeliveries(ctx, "deliveries", nextPos(), func(tx projections.DeliveryTx) error {
		if err := tx.PutDelivery(ctx, mk(7, events.Position{Commit: ^uint64(0), Prepare: ^uint64(0)})); err != nil {
			return err
		}
		return errors.New("no")
	})
	if err == nil {
		t.Fatal("UpdateDeliveries with a failing fn returned nil")
	}
	wantLastSource(t, s, top)
	lowered := dls[2]
	lowered.SourcePosition = events.Position{Commit: 1, Prepare: 1}
	putDeliveries(t, s, lowered)
	wantLastSource(t, s, events.Position{Commit: 1<<63 + 1, Prepare: 0})

	// Two deliveries of one source event (two apps) share its position.
	twin := mk(8, events.Position{Commit: 1<<63 + 1, Prepare: 0})
	putDeliveries(t, s, twin)
	gone := dls[3]
	gone.SourcePosition = events.Position{Commit: 2}
	putDeliveries(t, s, gone)
	wantLastSource(t, s, twin.SourcePosition)
}

func testAttempts(t *testing.T, s Store) {
	x, y, z := dlv(1, 1), dlv(1, 2), dlv(2, 3)
	putDeliveries(t, s, x, y, z)
	cst := time.FixedZone("CST", 8*3600)
	a1 := projections.Attempt{DeliveryID: x.DeliveryID, Attempt: 1, At: at(10).In(cst), StatusCode: nil,
		LatencyMS: 10_000, Error: ptr("dial tcp: i/o timeout"), Outcome: "retry"}
	a2 := projections.Attempt{DeliveryID: x.DeliveryID, Attempt: 2, At: at(20), StatusCode: ptr(500),
		LatencyMS: 12, Error: ptr(""), Outcome: "retry"}
	a3 := projections.Attempt{DeliveryID: x.DeliveryID, Attempt: 3, At: at(30), StatusCode: ptr(200),
		LatencyMS: 1 << 40, Outcome: "delivered"}
	b1 := projections.Attempt{DeliveryID: y.DeliveryID, Attempt: 1, At: at(11), StatusCode: ptr(0),
		Outcome: "refused"}
	addAttempts(t, s, a3, b1, a1) // out of order
	addAttempts(t, s, a2)

	_, as := getDelivery(t, s, 1, x.DeliveryID)
	wantRows(t, "attempts of x", as, []projections.Attempt{a1, a2, a3})
	_, as = getDelivery(t, s, 0, y.DeliveryID)
	wantRows(t, "attempts of y", as, []projections.Attempt{b1})
	_, as = getDelivery(t, s, 2, z.DeliveryID)
	wantRows(t, "attempts of z", as, nil)

	// Recording an attempt again (a replayed event) replaces it.
	a2b := projections.Attempt{DeliveryID: x.DeliveryID, Attempt: 2, At: at(21), StatusCode: nil,
		LatencyMS: 5, Error: nil, Outcome: "abandoned"}
	addAttempts(t, s, a2b, a2b)
	_, as = getDelivery(t, s, 1, x.DeliveryID)
	wantRows(t, "attempts of x after re-adding #2", as, []projections.Attempt{a1, a2b, a3})

	// Results are copies; replacing the delivery keeps its attempts.
	*as[0].Error = "mutated"
	*as[2].StatusCode = 1
	x.Status = domain.DeliveryDelivered
	putDeliveries(t, s, x)
	_, as = getDelivery(t, s, 1, x.DeliveryID)
	wantRows(t, "attempts of x after a caller mutated them", as, []projections.Attempt{a1, a2b, a3})
}

func testDeliveryTxReads(t *testing.T, s Store) {
	d := dlv(1, 1)
	write(t, deliveriesOf(s), func(tx projections.DeliveryTx) error {
		_, err := tx.Delivery(ctx, d.DeliveryID)
		wantNotFound(t, "Tx.Delivery before PutDelivery", err)
		if err := tx.PutDelivery(ctx, d); err != nil {
			return err
		}
		got, err := tx.Delivery(ctx, d.DeliveryID)
		if err != nil {
			return fmt.Errorf("Tx.Delivery after PutDelivery: %w", err)
		}
		wantRow(t, "Tx.Delivery after PutDelivery", got, d)

		// Read, change, write, read again: the projector's partial update.
		got.Status, got.Attempts, got.LastStatus = domain.DeliveryRetrying, 1, ptr(502)
		if err := tx.AddAttempt(ctx, projections.Attempt{DeliveryID: d.DeliveryID, Attempt: 1, At: at(5), Outcome: "retry"}); err != nil {
			return err
		}
		if err := tx.PutDelivery(ctx, got); err != nil {
			return err
		}
		again, err := tx.Delivery(ctx, d.DeliveryID)
		if err != nil {
			return err
		}
		wantRow(t, "Tx.Delivery after second PutDelivery", again, got)
		d = got
		return nil
	})

	got, as := getDelivery(t, s, 1, d.DeliveryID)
	wantRow(t, "Delivery after commit", got, d)
	if len(as) != 1 {
		t.Errorf("attempts after commit = %+v, want one", as)
	}

	// A later transaction reads committed rows of any app; a not-found read
	// handled by fn does not spoil it.
	other := dlv(2, 2)
	putDeliveries(t, s, other)
	third := dlv(3, 3)
	write(t, deliveriesOf(s), func(tx projections.DeliveryTx) error {
		got, err := tx.Delivery(ctx, other.DeliveryID)
		if err != nil {
			return err
		}
		wantRow(t, "Tx.Delivery of another app", got, other)
		if _, err := tx.Delivery(ctx, "missing"); !errors.Is(err, projections.ErrNotFound) {
			return fmt.Errorf("Tx.Delivery(missing) = %v, want ErrNotFound", err)
		}
		return tx.PutDelivery(ctx, third)
	})

	got, _ = getDelivery(t, s, 3, third.DeliveryID)
	wantRow(t, "delivery put after a not-found read", got, third)
}

func testFailedUpdateDeliveries(t *testing.T, s Store) {
	m := newModel()
	a, b := dlv(1, 10), dlv(2, 11)
	b.Status, b.NextAttemptAt = domain.DeliveryRetrying, ptr(at(5))
	attempt := projections.Attempt{DeliveryID: a.DeliveryID, Attempt: 1, At: at(3), StatusCode: ptr(500), Outcome: "retry"}
	m.put(a, b)
	m.addAttempt(attempt)
	nows := []time.Time{at(0), at(5), at(1010), at(1_000_000)}
	failedUpdate(t, s, deliveriesOf(s), func(tx projections.DeliveryTx) error {
		return firstErr(tx.PutDelivery(ctx, a), tx.PutDelivery(ctx, b), tx.AddAttempt(ctx, attempt))
	}, func(tx projections.DeliveryTx) error {
		c := dlv(3, 12)
		c.SourcePosition, c.NextAttemptAt = events.Position{Commit: ^uint64(0)}, ptr(at(0))
		a2 := a
		a2.AppID, a2.Status, a2.Cursor, a2.Body, a2.NextAttemptAt = 3, domain.DeliveryAbandoned, cursorAt(1), nil, nil
		b2 := b
		b2.NextAttemptAt = ptr(at(1))
		if err := firstErr(tx.PutDelivery(ctx, c), tx.PutDelivery(ctx, a2), tx.PutDelivery(ctx, b2),
			tx.AddAttempt(ctx, projections.Attempt{DeliveryID: a.DeliveryID, Attempt: 1, At: at(9), Outcome: "abandoned"}),
			tx.AddAttempt(ctx, projections.Attempt{DeliveryID: b.DeliveryID, Attempt: 1, At: at(9), Outcome: "retry"})); err != nil {
			return err
		}
		wantRow(t, "Tx.Delivery inside the failing update", must(tx.Delivery(ctx, c.DeliveryID))(t), c)
		return nil
	}, func(when string) {
		m.check(t, s, when, []int64{1, 2, 3}, nows)
		_, _, err := s.Delivery(ctx, 0, "d-0012")
		wantNotFound(t, "delivery put by the failed update "+when, err)
	})

	// The store is still usable.
	c := dlv(3, 12)
	putDeliveries(t, s, c)
	m.put(c)
	m.check(t, s, "after a later update", []int64{1, 2, 3}, nows)
}

// An outcome's or a resend's change of state leaves the body and the rest
// of the row as they were, moves the delivery in the due queue and the
// status counts, reads as written inside its transaction, and is undone
// with a failed update.
func testUpdateDeliveryState(t *testing.T, s Store) {
	m := newModel()
	a, erased := dlv(1, 10), dlv(2, 11)
	erased.Body, erased.Status, erased.NextAttemptAt = []byte{}, domain.DeliveryAbandoned, nil
	m.put(a, erased)
	nows := []time.Time{at(0), at(5), at(1010), at(1_000_000)}
	retry := func(st *projections.DeliveryState) {
		st.Status, st.Attempts, st.NextAttemptAt = domain.DeliveryRetrying, st.Attempts+1, ptr(at(5))
		st.LastStatus, st.LastError, st.LastErrorClass, st.UpdatedAt = ptr(500), ptr("busy"), ptr(domain.ErrorClassOther), at(20)
	}
	failedUpdate(t, s, deliveriesOf(s), func(tx projections.DeliveryTx) error {
		return firstErr(tx.PutDelivery(ctx, a), tx.PutDelivery(ctx, erased))
	}, func(tx projections.DeliveryTx) error {
		if err := tx.UpdateDeliveryState(ctx, a.DeliveryID, retry); err != nil {
			return err
		}
		want := a
		st := want.State()
		retry(&st)
		wantRow(t, "Tx.Delivery after UpdateDeliveryState", must(tx.Delivery(ctx, a.DeliveryID))(t), want.WithState(st))
		return nil
	}, func(when string) { m.check(t, s, when, []int64{1, 2}, nows) })

	var sawErased [2]bool
	writeAt(t, deliveriesOf(s), "deliveries", nextPos(), func(tx projections.DeliveryTx) error {
		return firstErr(
			tx.UpdateDeliveryState(ctx, a.DeliveryID, func(st *projections.DeliveryState) { sawErased[0] = st.Erased; retry(st) }),
			tx.UpdateDeliveryState(ctx, erased.DeliveryID, func(st *projections.DeliveryState) { sawErased[1] = st.Erased; st.UpdatedAt = at(30) }))
	})
	if sawErased != [2]bool{false, true} {
		t.Errorf("UpdateDeliveryState saw Erased %v for a delivery with a body and one without: want [false true]", sawErased)
	}
	st := a.State()
	retry(&st)
	erased.UpdatedAt = at(30)
	m.put(a.WithState(st), erased)
	m.check(t, s, "after UpdateDeliveryState", []int64{1, 2}, nows)

	err := deliveriesOf(s).update(ctx, "deliveries", nextPos(), func(tx projections.DeliveryTx) error {
		return tx.UpdateDeliveryState(ctx, "d-9999", func(*projections.DeliveryState) {})
	})
	wantNotFound(t, "UpdateDeliveryState of no delivery", err)
}

func testDeliveryCheckpoints(t *testing.T, s Store) {
	p1, p2, p3 := events.Position{Commit: 10, Prepare: 9}, events.Position{Commit: 20, Prepare: 20}, events.Position{Commit: 1 << 63, Prepare: 1}
	noop := func(projections.DeliveryTx) error { return nil }
	if err := s.UpdateDeliveries(ctx, "webhooks", p1, noop); err != nil {
		t.Fatal(err)
	}
	wantCheckpoint(t, s, "webhooks", p1)
	// One checkpoint table: Update and UpdateDeliveries move the same names.
	writeAt(t, usersOf(s), "webhooks", p2, func(projections.UserTx) error { return nil })
	wantCheckpoint(t, s, "webhooks", p2)
	if err := s.UpdateDeliveries(ctx, "webhooks", p3, func(tx projections.DeliveryTx) error {
		return tx.PutDelivery(ctx, dlv(1, 1))
	}); err != nil {
		t.Fatal(err)
	}
	wantCheckpoint(t, s, "webhooks", p3)
	wantCheckpoint(t, s, "other", events.Position{})
	if err := s.UpdateDeliveries(ctx, "other", p1, func(projections.DeliveryTx) error { return errors.New("no") }); err == nil {
		t.Fatal("UpdateDeliveries with a failing fn returned nil")
	}
	wantCheckpoint(t, s, "other", events.Position{})
	wantCheckpoint(t, s, "webhooks", p3)
}

func testResetDeliveries(t *testing.T, s Store) {
	d := dlv(1, 1)
	putDeliveries(t, s, d, dlv(2, 2))
	addAttempts(t, s, projections.Attempt{DeliveryID: d.DeliveryID, Attempt: 1, At: at(1), Outcome: "retry"})

	if err := s.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	_, _, err := s.Delivery(ctx, 0, d.DeliveryID)
	wantNotFound(t, "Delivery after Reset", err)
	wantIDs(t, "Deliveries after Reset", must(s.Deliveries(ctx, domain.DeliveryFilter{}))(t), nil)
	wantIDs(t, "Deliveries(app 1) after Reset", must(s.Deliveries(ctx, domain.DeliveryFilter{AppID: 1}))(t), nil)
	wantIDs(t, "Due after Reset", must(s.Due(ctx, at(1_000_000), 0))(t), nil)
	wantNextDue(t, s, time.Time{}, false)
	wantCounts(t, s, map[string]int{})
	wantLastSource(t, s, events.Position{})
	wantCheckpoint(t, s, "deliveries", events.Position{})

	// Usable after Reset, and the old attempts do not come back.
	putDeliveries(t, s, d)
	if _, as := getDelivery(t, s, 1, d.DeliveryID); len(as) != 0 {
		t.Errorf("attempts after Reset and rebuild = %+v, want none", as)
	}
	wantIDs(t, "Deliveries after rebuild", must(s.Deliveries(ctx, domain.DeliveryFilter{}))(t), []string{d.DeliveryID})
}

// testConcurrentDeliveries runs the projector's writes beside the
// dispatcher's and the feed's reads.
func testConcurrentDeliveries(t *testing.T, s Store) {
	const writers, rounds = 3, 15
	errs := make(chan error, writers*rounds*2)
	var wg sync.WaitGroup
	for w := range writers {
		app := int64(w + 1)
		wg.Go(func() {
			proj := fmt.Sprintf("webhooks-%d", w)
			for r := range rounds {
				n := w*rounds + r
				err := s.UpdateDeliveries(ctx, proj, events.Position{Commit: uint64(r + 1), Prepare: uint64(r + 1)}, func(tx projections.DeliveryTx) error {
					if err := tx.PutDelivery(ctx, dlv(app, n)); err != nil {
						return err
					}
					if r == 0 {
						return nil
					}
					prev, err := tx.Delivery(ctx, dlv(app, n-1).DeliveryID)
					if err != nil {
						return err
					}
					prev.Status, prev.NextAttemptAt, prev.Attempts = domain.DeliveryDelivered, nil, 1
					if err := tx.AddAttempt(ctx, projections.Attempt{DeliveryID: prev.DeliveryID, Attempt: 1, At: at(r), Outcome: "delivered"}); err != nil {
						return err
					}
					return tx.PutDelivery(ctx, prev)
				})
				if err != nil {
					errs <- fmt.Errorf("%s round %d: %w", proj, r, err)
					return
				}
			}
		})
		wg.Go(func() {
			for range rounds {
				if _, err := s.Due(ctx, at(1_000_000), 10); err != nil {
					errs <- fmt.Errorf("due: %w", err)
					return
				}
				if _, err := s.Deliveries(ctx, domain.DeliveryFilter{AppID: app}); err != nil {
					errs <- fmt.Errorf("deliveries: %w", err)
					return
				}
				if _, _, err := s.NextDue(ctx); err != nil {
					errs <- fmt.Errorf("NextDue: %w", err)
					return
				}
				if _, err := s.CountByStatus(ctx); err != nil {
					errs <- fmt.Errorf("CountByStatus: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	wantCounts(t, s, map[string]int{
		domain.DeliveryDelivered: writers * (rounds - 1),
		domain.DeliveryPending:   writers,
	})
	var wantDue []string
	for w := range writers {
		wantDue = append(wantDue, dlv(0, w*rounds+rounds-1).DeliveryID)
		wantCheckpoint(t, s, fmt.Sprintf("webhooks-%d", w), events.Position{Commit: rounds, Prepare: rounds})
		if l := must(s.Deliveries(ctx, domain.DeliveryFilter{AppID: int64(w + 1)}))(t); len(l) != rounds {
			t.Errorf("deliveries of app %d = %d, want %d", w+1, len(l), rounds)
		}
	}
	wantIDs(t, "Due", must(s.Due(ctx, at(1_000_000), 0))(t), wantDue)
}

// testDeliveriesModel drives a store with a fixed pseudo-random mix of
// creates, replaces, attempts and failed transactions, and compares every
// read with the model after each transaction.
func testDeliveriesModel(t *testing.T, s Store) {
	rng := rand.New(rand.NewPCG(20240305, 1))
	m := newModel()
	apps := []int64{1, 2, 3}
	nows := []time.Time{at(1000), at(1010), at(1030), at(1_000_000)}
	created := 0
	var ids []string
	random := func(d projections.Delivery) projections.Delivery {
		d.Status = allStatuses[rng.IntN(len(allStatuses))]
		d.NextAttemptAt = nil
		if rng.IntN(4) > 0 {
			d.NextAttemptAt = ptr(at(1000 + rng.IntN(40)))
		}
		d.Attempts = rng.IntN(6)
		d.EndpointID = int64(rng.IntN(3))
		d.UpdatedAt = at(10*created + rng.IntN(1000))
		return d
	}
	for round := range 30 {
		next := m.clone()
		fail := round%4 == 3
		err := s.UpdateDeliveries(ctx, "deliveries", nextPos(), func(tx projections.DeliveryTx) error {
			for range 1 + rng.IntN(8) {
				switch op := rng.IntN(10); {
				case op < 5 || len(ids) == 0: // create
					d := random(dlv(apps[rng.IntN(len(apps))], created))
					if rng.IntN(3) == 0 { // several deliveries of one source event
						d.SourcePosition = sourceAt(created / 2)
					}
					created++
					if err := tx.PutDelivery(ctx, d); err != nil {
						return err
					}
					next.put(d)
					if !fail {
						ids = append(ids, d.DeliveryID)
					}
				case op < 8: // replace what the transaction sees
					d, ok := next.deliveries[ids[rng.IntN(len(ids))]]
					if !ok {
						continue
					}
					got, err := tx.Delivery(ctx, d.DeliveryID)
					if err != nil {
						return err
					}
					wantRow(t, "Tx.Delivery", got, d)
					d = random(d)
					if rng.IntN(5) == 0 { // the rare full replacement moves it
						d.AppID = apps[rng.IntN(len(apps))]
						d.SourcePosition = sourceAt(rng.IntN(created + 1))
					}
					if err := tx.PutDelivery(ctx, d); err != nil {
						return err
					}
					next.put(d)
				default: // attempt
					id := ids[rng.IntN(len(ids))]
					a := projections.Attempt{DeliveryID: id, Attempt: 1 + rng.IntN(4), At: at(rng.IntN(100)),
						LatencyMS: int64(rng.IntN(1000)), Outcome: "retry"}
					if rng.IntN(2) == 0 {
						a.StatusCode = ptr(500 + rng.IntN(4))
					}
					if err := tx.AddAttempt(ctx, a); err != nil {
						return err
					}
					next.addAttempt(a)
				}
			}
			if fail {
				return errors.New("rolled back")
			}
			return nil
		})
		if fail != (err != nil) {
			t.Fatalf("round %d: UpdateDeliveries = %v, want failure %v", round, err, fail)
		}
		if !fail {
			m = next
		}
		m.check(t, s, fmt.Sprintf("round %d", round), apps, nows)
		if t.Failed() {
			return
		}
	}
}

// The stable error classes of the delivery log: a delivery's last class and
// each attempt's class are kept as written, and replaced with the row.
func testErrorClasses(t *testing.T, s Store) {
	x := dlv(1, 1)
	x.Status, x.Attempts = domain.DeliveryRetrying, 2
	x.LastError, x.LastErrorClass = ptr("tls: failed to verify certificate: x509: certificate signed by unknown authority"), ptr(domain.ErrorClassTLS)
	putDeliveries(t, s, x)
	a1 := projections.Attempt{DeliveryID: x.DeliveryID, Attempt: 1, At: at(10), LatencyMS: 3,
		Error: ptr("dial tcp 203.0.113.7:443: connect: connection refused"), ErrorClass: ptr(domain.ErrorClassConnectionRefused), Outcome: "retry"}
	a2 := projections.Attempt{DeliveryID: x.DeliveryID, Attempt: 2, At: at(20), StatusCode: ptr(503), LatencyMS: 4,
		ErrorClass: ptr(domain.ErrorClassHTTPStatus), Outcome: "retry"}
	addAttempts(t, s, a1, a2)
	got, as := getDelivery(t, s, 1, x.DeliveryID)
	wantRow(t, "delivery with a class", got, x)
	wantRows(t, "attempts with classes", as, []projections.Attempt{a1, a2})

	// A later attempt that succeeded clears the class.
	x.Status, x.Attempts, x.LastStatus, x.LastError, x.LastErrorClass = domain.DeliveryDelivered, 3, ptr(200), nil, nil
	putDeliveries(t, s, x)
	a2.ErrorClass = nil
	addAttempts(t, s, a2)
	got, as = getDelivery(t, s, 1, x.DeliveryID)
	wantRow(t, "delivery after success", got, x)
	wantRows(t, "attempt #2 replaced without class", as, []projections.Attempt{a1, a2})
	if l := must(s.Deliveries(ctx, domain.DeliveryFilter{AppID: 1}))(t); len(l) == 1 {
		wantRow(t, "listed delivery", l[0], x)
	}
}

func testEndpointFilters(t *testing.T, s Store) {
	m := filterFixture(t, s)
	e0, e40, e41, none := int64(0), int64(40), int64(41), int64(7)
	for _, f := range []domain.DeliveryFilter{
		{EndpointID: &e0},
		{EndpointID: &e40},
		{AppID: 2, EndpointID: &e41},
		{EndpointID: &none},
		{Feed: true},
		{AppID: 1, Feed: true},
		{AppID: 3, Feed: true, After: cursorAt(9), Limit: 3},
		{EndpointID: &e40, Status: domain.DeliveryPending, EventType: domain.TestEvent},
		{EndpointID: &e41, From: at(50), To: at(250)},
	} {
		wantRows(t, fmt.Sprintf("Deliveries(%+v)", f), must(s.Deliveries(ctx, f))(t), m.list(f))
	}
	// Worked out by hand: the default endpoint's deliveries of app 1 without test events.
	wantIDs(t, "app 1's feed", must(s.Deliveries(ctx, domain.DeliveryFilter{AppID: 1, Feed: true}))(t),
		[]string{"d-0000", "d-0009", "d-0012", "d-0021", "d-0024", "d-0033"})
	wantIDs(t, "endpoint 41", must(s.Deliveries(ctx, domain.DeliveryFilter{EndpointID: &e41, Limit: 3}))(t),
		[]string{"d-0003", "d-0007", "d-0011"})
	for _, f := range []domain.DeliveryFilter{{Feed: true}, {EndpointID: &e40}} {
		all := f
		all.Limit = 1000
		wantPaging(t, lister(t, s.Deliveries), f, m.list(all))
	}
	d, _ := getDelivery(t, s, 1, "d-0003")
	if d.EndpointID != 41 {
		t.Fatalf("EndpointID read back %d, want 41", d.EndpointID)
	}
}

func testResponseExcerpts(t *testing.T, s Store) {
	x, y := dlv(1, 1), dlv(1, 2)
	putDeliveries(t, s, x, y)
	a1 := projections.Attempt{DeliveryID: x.DeliveryID, Attempt: 1, At: at(10), StatusCode: ptr(500), LatencyMS: 3, Outcome: "retry", ResponseExcerpt: "upstream down"}
	a2 := projections.Attempt{DeliveryID: x.DeliveryID, Attempt: 2, At: at(20), StatusCode: ptr(200), LatencyMS: 4, Outcome: "delivered", ResponseExcerpt: `{"ok":true,"name":"李"}`}
	b1 := projections.Attempt{DeliveryID: y.DeliveryID, Attempt: 1, At: at(11), StatusCode: ptr(204), Outcome: "delivered"}
	addAttempts(t, s, a1, a2, b1)
	_, as := getDelivery(t, s, 1, x.DeliveryID)
	wantRows(t, "attempts of x", as, []projections.Attempt{a1, a2})

	// A failed transaction leaves the excerpts as they were.
	boom := errors.New("boom")
	if err := try(deliveriesOf(s), func(tx projections.DeliveryTx) error {
		if err := tx.ClearExcerpts(ctx, x.DeliveryID); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("UpdateDeliveries = %v, want boom", err)
	}
	_, as = getDelivery(t, s, 1, x.DeliveryID)
	wantRows(t, "attempts of x after a rolled-back clear", as, []projections.Attempt{a1, a2})

	write(t, deliveriesOf(s), func(tx projections.DeliveryTx) error {
		if err := tx.ClearExcerpts(ctx, x.DeliveryID); err != nil {
			return err
		}
		return tx.ClearExcerpts(ctx, "no-such-delivery")
	})
	a1.ResponseExcerpt, a2.ResponseExcerpt = "", ""
	_, as = getDelivery(t, s, 1, x.DeliveryID)
	wantRows(t, "attempts of x after the clear", as, []projections.Attempt{a1, a2})
	_, as = getDelivery(t, s, 1, y.DeliveryID)
	wantRows(t, "another delivery's attempts", as, []projections.Attempt{b1})
}

// dueOf is what Due lists of the given deliveries.
func dueOf(ds ...projections.Delivery) []domain.DueDelivery {
	out := make([]domain.DueDelivery, len(ds))
	for i, d := range ds {
		out[i] = domain.DueDelivery{DeliveryID: d.DeliveryID, AppID: d.AppID, EndpointID: d.EndpointID}
	}
	return out
}

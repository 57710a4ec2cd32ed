package storetest

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// The delivery cases of Run. Every read-model store is also the delivery
// store, so a store without projections.DeliveryStore fails them.

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

func deliveryStore(t *testing.T, s Store) projections.DeliveryStore {
	t.Helper()
	ds, ok := s.(projections.DeliveryStore)
	if !ok {
		t.Fatalf("%T does not implement projections.DeliveryStore", s)
	}
	return ds
}

// fixturePos numbers the fixture writes, so each moves the checkpoint on.
var fixturePos atomic.Uint64

func nextPos() events.Position {
	n := fixturePos.Add(1)
	return events.Position{Commit: n, Prepare: n}
}

func updateDeliveries(t *testing.T, ds projections.DeliveryStore, fn func(projections.DeliveryTx) error) {
	t.Helper()
	if err := ds.UpdateDeliveries(context.Background(), "deliveries", nextPos(), fn); err != nil {
		t.Fatalf("UpdateDeliveries: %v", err)
	}
}

func putDeliveries(t *testing.T, ds projections.DeliveryStore, dls ...projections.Delivery) {
	t.Helper()
	updateDeliveries(t, ds, func(tx projections.DeliveryTx) error {
		for _, d := range dls {
			if err := tx.PutDelivery(context.Background(), d); err != nil {
				return fmt.Errorf("PutDelivery %s: %w", d.DeliveryID, err)
			}
		}
		return nil
	})
}

func addAttempts(t *testing.T, ds projections.DeliveryStore, as ...projections.Attempt) {
	t.Helper()
	updateDeliveries(t, ds, func(tx projections.DeliveryTx) error {
		for _, a := range as {
			if err := tx.AddAttempt(context.Background(), a); err != nil {
				return fmt.Errorf("AddAttempt %s #%d: %w", a.DeliveryID, a.Attempt, err)
			}
		}
		return nil
	})
}

func getDelivery(t *testing.T, ds projections.DeliveryStore, app int64, id string) (projections.Delivery, []projections.Attempt) {
	t.Helper()
	d, as, err := ds.Delivery(context.Background(), app, id)
	if err != nil {
		t.Fatalf("Delivery(%d, %q): %v", app, id, err)
	}
	return d, as
}

func listDeliveries(t *testing.T, ds projections.DeliveryStore, f domain.DeliveryFilter) []projections.Delivery {
	t.Helper()
	out, err := ds.Deliveries(context.Background(), f)
	if err != nil {
		t.Fatalf("Deliveries(%+v): %v", f, err)
	}
	return out
}

func due(t *testing.T, ds projections.DeliveryStore, now time.Time, limit int) []projections.Delivery {
	t.Helper()
	out, err := ds.Due(context.Background(), now, limit)
	if err != nil {
		t.Fatalf("Due(%v, %d): %v", now, limit, err)
	}
	return out
}

func nextDue(t *testing.T, ds projections.DeliveryStore) (time.Time, bool) {
	t.Helper()
	next, ok, err := ds.NextDue(context.Background())
	if err != nil {
		t.Fatalf("NextDue: %v", err)
	}
	return next, ok
}

func wantNextDue(t *testing.T, ds projections.DeliveryStore, want time.Time, wantOK bool) {
	t.Helper()
	got, ok := nextDue(t, ds)
	if ok != wantOK || (ok && !sameTime(got, want)) || (!ok && !got.IsZero()) {
		t.Errorf("NextDue = %v, %v; want %v, %v", got, ok, want, wantOK)
	}
}

func counts(t *testing.T, ds projections.DeliveryStore) map[string]int {
	t.Helper()
	c, err := ds.CountByStatus(context.Background())
	if err != nil {
		t.Fatalf("CountByStatus: %v", err)
	}
	return c
}

func wantCounts(t *testing.T, ds projections.DeliveryStore, want map[string]int) {
	t.Helper()
	if got := counts(t, ds); !maps.Equal(got, want) {
		t.Errorf("CountByStatus = %v, want %v", got, want)
	}
}

func lastSource(t *testing.T, ds projections.DeliveryStore) events.Position {
	t.Helper()
	p, err := ds.LastSource(context.Background())
	if err != nil {
		t.Fatalf("LastSource: %v", err)
	}
	return p
}

func wantLastSource(t *testing.T, ds projections.DeliveryStore, want events.Position) {
	t.Helper()
	if got := lastSource(t, ds); got != want {
		t.Errorf("LastSource = %v, want %v", got, want)
	}
}

func deliveryIDs(ds []projections.Delivery) []string {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.DeliveryID
	}
	return ids
}

func wantIDs(t *testing.T, what string, got []projections.Delivery, want []string) {
	t.Helper()
	if ids := deliveryIDs(got); !slices.Equal(ids, want) {
		t.Errorf("%s = %v, want %v", what, ids, want)
	}
}

func sameP[T comparable](got, want *T) bool {
	if got == nil || want == nil {
		return got == nil && want == nil
	}
	return *got == *want
}

func diffDelivery(got, want projections.Delivery) []string {
	var d []string
	f := func(name string, ok bool, g, w any) {
		if !ok {
			d = append(d, fmt.Sprintf("%s: got %v, want %v", name, g, w))
		}
	}
	f("DeliveryID", got.DeliveryID == want.DeliveryID, got.DeliveryID, want.DeliveryID)
	f("AppID", got.AppID == want.AppID, got.AppID, want.AppID)
	f("EventType", got.EventType == want.EventType, got.EventType, want.EventType)
	f("SourceEventID", got.SourceEventID == want.SourceEventID, got.SourceEventID, want.SourceEventID)
	f("SourcePosition", got.SourcePosition == want.SourcePosition, got.SourcePosition, want.SourcePosition)
	f("Cursor", got.Cursor == want.Cursor, got.Cursor, want.Cursor)
	if !bytes.Equal(got.Body, want.Body) {
		d = append(d, fmt.Sprintf("Body: got %d bytes %.40q, want %d bytes %.40q", len(got.Body), got.Body, len(want.Body), want.Body))
	}
	f("Status", got.Status == want.Status, got.Status, want.Status)
	f("Attempts", got.Attempts == want.Attempts, got.Attempts, want.Attempts)
	f("NextAttemptAt", sameTimePtr(got.NextAttemptAt, want.NextAttemptAt), show(got.NextAttemptAt), show(want.NextAttemptAt))
	f("LastStatus", sameP(got.LastStatus, want.LastStatus), show(got.LastStatus), show(want.LastStatus))
	f("LastError", sameP(got.LastError, want.LastError), show(got.LastError), show(want.LastError))
	f("LastErrorClass", sameP(got.LastErrorClass, want.LastErrorClass), show(got.LastErrorClass), show(want.LastErrorClass))
	f("CreatedAt", sameTime(got.CreatedAt, want.CreatedAt), got.CreatedAt, want.CreatedAt)
	f("UpdatedAt", sameTime(got.UpdatedAt, want.UpdatedAt), got.UpdatedAt, want.UpdatedAt)
	return d
}

func wantDelivery(t *testing.T, what string, got, want projections.Delivery) {
	t.Helper()
	for _, d := range diffDelivery(got, want) {
		t.Errorf("%s: %s", what, d)
	}
}

func wantDeliveries(t *testing.T, what string, got, want []projections.Delivery) {
	t.Helper()
	if !slices.Equal(deliveryIDs(got), deliveryIDs(want)) {
		t.Errorf("%s = %v, want %v", what, deliveryIDs(got), deliveryIDs(want))
		return
	}
	for i := range got {
		wantDelivery(t, fmt.Sprintf("%s[%d]", what, i), got[i], want[i])
	}
}

func diffAttempt(got, want projections.Attempt) []string {
	var d []string
	f := func(name string, ok bool, g, w any) {
		if !ok {
			d = append(d, fmt.Sprintf("%s: got %v, want %v", name, g, w))
		}
	}
	f("DeliveryID", got.DeliveryID == want.DeliveryID, got.DeliveryID, want.DeliveryID)
	f("Attempt", got.Attempt == want.Attempt, got.Attempt, want.Attempt)
	f("At", sameTime(got.At, want.At), got.At, want.At)
	f("StatusCode", sameP(got.StatusCode, want.StatusCode), show(got.StatusCode), show(want.StatusCode))
	f("LatencyMS", got.LatencyMS == want.LatencyMS, got.LatencyMS, want.LatencyMS)
	f("Error", sameP(got.Error, want.Error), show(got.Error), show(want.Error))
	f("ErrorClass", sameP(got.ErrorClass, want.ErrorClass), show(got.ErrorClass), show(want.ErrorClass))
	f("Outcome", got.Outcome == want.Outcome, got.Outcome, want.Outcome)
	return d
}

func wantAttempts(t *testing.T, what string, got, want []projections.Attempt) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d attempts %+v, want %d", what, len(got), got, len(want))
		return
	}
	for i := range got {
		for _, d := range diffAttempt(got[i], want[i]) {
			t.Errorf("%s[%d]: %s", what, i, d)
		}
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

func (m *model) put(ds ...projections.Delivery) {
	for _, d := range ds {
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
		if (f.AppID != 0 && d.AppID != f.AppID) ||
			(f.Status != "" && d.Status != f.Status) ||
			(f.EventType != "" && d.EventType != f.EventType) ||
			(!f.From.IsZero() && d.CreatedAt.Before(f.From)) ||
			(!f.To.IsZero() && !d.CreatedAt.Before(f.To)) ||
			!f.After.Less(d.Cursor) {
			continue
		}
		out = append(out, d)
	}
	slices.SortFunc(out, feedOrder)
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

// check compares every read of ds with the model.
func (m *model) check(t *testing.T, ds projections.DeliveryStore, what string, apps []int64, nows []time.Time) {
	t.Helper()
	for _, app := range append([]int64{0}, apps...) {
		f := domain.DeliveryFilter{AppID: app, Limit: 1000}
		wantDeliveries(t, fmt.Sprintf("%s: Deliveries(app %d)", what, app), listDeliveries(t, ds, f), m.list(f))
	}
	for _, now := range nows {
		wantDeliveries(t, fmt.Sprintf("%s: Due(%v)", what, now), due(t, ds, now, 1000), m.due(now, 1000))
	}
	next, ok := m.nextDue()
	wantNextDue(t, ds, next, ok)
	wantCounts(t, ds, m.counts())
	wantLastSource(t, ds, m.lastSource())
	for id, d := range m.deliveries {
		got, as := getDelivery(t, ds, d.AppID, id)
		wantDelivery(t, fmt.Sprintf("%s: Delivery(%q)", what, id), got, d)
		wantAttempts(t, fmt.Sprintf("%s: attempts of %q", what, id), as, m.attempts[id])
	}
}

// ---- cases ----

func testDeliveryRoundTrip(t *testing.T, s Store) {
	ctx := context.Background()
	ds := deliveryStore(t, s)
	body := make([]byte, 64<<10) // every byte value, NULs and invalid UTF-8 included
	for i := range body {
		body[i] = byte(i*7 + i/256)
	}
	full := projections.Delivery{
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
	bare := projections.Delivery{
		DeliveryID: "b",
		AppID:      -3,
		Cursor:     events.Position{Prepare: 1},
		Body:       nil, // reads back empty
		LastStatus: nil,
		CreatedAt:  at(0),
		UpdatedAt:  at(0),
	}
	zeroes := projections.Delivery{
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
	updateDeliveries(t, ds, func(tx projections.DeliveryTx) error {
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

	for _, want := range []projections.Delivery{full, bare, zeroes} {
		got, as := getDelivery(t, ds, want.AppID, want.DeliveryID)
		wantDelivery(t, fmt.Sprintf("Delivery(%q)", want.DeliveryID), got, want)
		if len(as) != 0 {
			t.Errorf("attempts of %q = %+v, want none", want.DeliveryID, as)
		}
		got, _ = getDelivery(t, ds, 0, want.DeliveryID)
		wantDelivery(t, fmt.Sprintf("Delivery(0, %q)", want.DeliveryID), got, want)
	}
	wantDeliveries(t, "Deliveries(app -3)", listDeliveries(t, ds, domain.DeliveryFilter{AppID: -3}),
		[]projections.Delivery{bare, zeroes})
	wantDeliveries(t, "Deliveries(every app)", listDeliveries(t, ds, domain.DeliveryFilter{}),
		[]projections.Delivery{bare, zeroes, full})
	wantDeliveries(t, "Due", due(t, ds, time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC), 10),
		[]projections.Delivery{zeroes, full})

	// Inside a transaction too.
	updateDeliveries(t, ds, func(tx projections.DeliveryTx) error {
		got, err := tx.Delivery(ctx, full.DeliveryID)
		if err != nil {
			return err
		}
		wantDelivery(t, "Tx.Delivery", got, full)
		got.Body[1] ^= 0xff // results are copies
		*got.LastStatus = 200
		return nil
	})

	// The store owns its copies: changing what was read changes nothing.
	got, _ := getDelivery(t, ds, full.AppID, full.DeliveryID)
	got.Body[2] ^= 0xff
	*got.LastError, *got.NextAttemptAt, *got.LastStatus = "mutated", at(1), 1
	for _, l := range [][]projections.Delivery{
		listDeliveries(t, ds, domain.DeliveryFilter{AppID: full.AppID}),
		due(t, ds, full.NextAttemptAt.Add(time.Hour), 10),
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
	got, _ = getDelivery(t, ds, full.AppID, full.DeliveryID)
	wantDelivery(t, "Delivery after callers mutated results", got, full)
}

func testPutDeliveryReplaces(t *testing.T, s Store) {
	ds := deliveryStore(t, s)
	old := dlv(1, 20)
	old.Status, old.Attempts, old.LastStatus, old.LastError = domain.DeliveryRetrying, 2, ptr(500), ptr("boom")
	other := dlv(1, 10)
	putDeliveries(t, ds, old, other)
	wantLastSource(t, ds, old.SourcePosition)

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
	putDeliveries(t, ds, repl)

	got, _ := getDelivery(t, ds, 2, repl.DeliveryID)
	wantDelivery(t, "replaced delivery", got, repl)
	_, _, err := ds.Delivery(context.Background(), 1, repl.DeliveryID)
	wantNotFound(t, "Delivery in the old app after replace", err)
	wantIDs(t, "Deliveries(app 1)", listDeliveries(t, ds, domain.DeliveryFilter{AppID: 1}), []string{other.DeliveryID})
	wantIDs(t, "Deliveries(app 2)", listDeliveries(t, ds, domain.DeliveryFilter{AppID: 2}), []string{repl.DeliveryID})
	wantIDs(t, "Deliveries(every app)", listDeliveries(t, ds, domain.DeliveryFilter{}),
		[]string{repl.DeliveryID, other.DeliveryID})
	wantIDs(t, "Due", due(t, ds, at(1_000_000), 0), []string{other.DeliveryID})
	wantNextDue(t, ds, *other.NextAttemptAt, true)
	wantCounts(t, ds, map[string]int{domain.DeliveryPending: 1, domain.DeliveryDelivered: 1})
	wantLastSource(t, ds, other.SourcePosition) // the highest source went with the old row

	// Putting the same row again changes nothing.
	putDeliveries(t, ds, repl, repl)
	wantCounts(t, ds, map[string]int{domain.DeliveryPending: 1, domain.DeliveryDelivered: 1})
	wantIDs(t, "Deliveries after identical put", listDeliveries(t, ds, domain.DeliveryFilter{}),
		[]string{repl.DeliveryID, other.DeliveryID})
}

func testDeliveryTenancy(t *testing.T, s Store) {
	ctx := context.Background()
	ds := deliveryStore(t, s)
	d1, d2 := dlv(1, 1), dlv(2, 2)
	putDeliveries(t, ds, d1, d2)
	addAttempts(t, ds, projections.Attempt{DeliveryID: d1.DeliveryID, Attempt: 1, At: at(5), Outcome: "retry"})

	got, as := getDelivery(t, ds, 1, d1.DeliveryID)
	wantDelivery(t, "Delivery(1, d1)", got, d1)
	if len(as) != 1 {
		t.Errorf("attempts of d1 = %+v, want one", as)
	}
	got, _ = getDelivery(t, ds, 0, d2.DeliveryID)
	wantDelivery(t, "Delivery(0, d2)", got, d2)

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
		d, as, err := ds.Delivery(ctx, c.app, c.id)
		wantNotFound(t, fmt.Sprintf("Delivery(%d, %q)", c.app, c.id), err)
		if err != nil && (d.DeliveryID != "" || len(as) != 0) {
			t.Errorf("Delivery(%d, %q) returned data with its error: %+v, %+v", c.app, c.id, d, as)
		}
	}
	wantIDs(t, "Deliveries(app 2)", listDeliveries(t, ds, domain.DeliveryFilter{AppID: 2}), []string{d2.DeliveryID})
	wantIDs(t, "Deliveries(app 3)", listDeliveries(t, ds, domain.DeliveryFilter{AppID: 3}), nil)
}

// filterFixture puts 36 deliveries over three apps, every status and three
// event types, in an order unlike their cursors', and returns the model.
func filterFixture(t *testing.T, ds projections.DeliveryStore) *model {
	t.Helper()
	m := newModel()
	types := []string{"user.registered", "user.profile.updated", "user.family_member.added"}
	var dls []projections.Delivery
	for n := range 36 {
		d := dlv(int64(1+n%3), n)
		d.Status = allStatuses[(n/3)%len(allStatuses)]
		d.EventType = types[(n/2)%len(types)]
		dls = append(dls, d)
	}
	// Written newest first, in two transactions, so the feed is not built by appends.
	slices.Reverse(dls)
	putDeliveries(t, ds, dls[:20]...)
	putDeliveries(t, ds, dls[20:]...)
	m.put(dls...)
	return m
}

func testDeliveriesFilters(t *testing.T, s Store) {
	ds := deliveryStore(t, s)
	m := filterFixture(t, ds)
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
		wantDeliveries(t, fmt.Sprintf("Deliveries(%+v)", f), listDeliveries(t, ds, f), m.list(f))
	}

	// The model itself, on cases worked out by hand.
	wantIDs(t, "app 1, pending", listDeliveries(t, ds, domain.DeliveryFilter{AppID: 1, Status: domain.DeliveryPending}),
		[]string{"d-0000", "d-0018"})
	wantIDs(t, "bounds [at(100), at(130))", listDeliveries(t, ds, domain.DeliveryFilter{From: at(100), To: at(130)}),
		[]string{"d-0010", "d-0011", "d-0012"})
	wantIDs(t, "after the 2^63 boundary", listDeliveries(t, ds, domain.DeliveryFilter{After: cursorAt(11), Limit: 2}),
		[]string{"d-0012", "d-0013"})
	wantIDs(t, "app 2 after d-0004", listDeliveries(t, ds, domain.DeliveryFilter{AppID: 2, After: cursorAt(4), Limit: 3}),
		[]string{"d-0007", "d-0010", "d-0013"})
}

func testDeliveriesPaging(t *testing.T, s Store) {
	ds := deliveryStore(t, s)
	m := filterFixture(t, ds)
	for _, f := range []domain.DeliveryFilter{
		{},
		{AppID: 1},
		{Status: domain.DeliveryPending},
		{AppID: 2, EventType: "user.registered"},
		{From: at(55), To: at(305)},
	} {
		want := deliveryIDs(m.list(domain.DeliveryFilter{AppID: f.AppID, Status: f.Status,
			EventType: f.EventType, From: f.From, To: f.To, Limit: 1000}))
		for _, limit := range []int{1, 2, 3, 7, 100} {
			var got []string
			seen := map[string]bool{}
			page := f
			page.Limit = limit
			done := false
			for range len(want) + 2 { // one page per delivery at worst, then the empty one
				l := listDeliveries(t, ds, page)
				if len(l) == 0 {
					done = true
					break
				}
				if len(l) > limit {
					t.Fatalf("%+v: page of %d, limit %d", page, len(l), limit)
				}
				for _, d := range l {
					if seen[d.DeliveryID] {
						t.Fatalf("%+v: %s listed twice", page, d.DeliveryID)
					}
					if !page.After.Less(d.Cursor) {
						t.Fatalf("%+v: %s at %v is not after the cursor", page, d.DeliveryID, d.Cursor)
					}
					seen[d.DeliveryID] = true
					got = append(got, d.DeliveryID)
					page.After = d.Cursor
				}
			}
			if !done {
				t.Fatalf("%+v: paging did not end", f)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%+v paged by %d = %v, want %v", f, limit, got, want)
			}
		}
	}
}

func testDeliveriesLimits(t *testing.T, s Store) {
	ds := deliveryStore(t, s)
	const n = 1005
	dls := make([]projections.Delivery, n)
	for i := range dls {
		dls[i] = dlv(7, i)
		dls[i].Body = []byte("{}")
	}
	putDeliveries(t, ds, dls...)
	for _, c := range []struct{ limit, want int }{
		{0, 100}, {-1, 100}, {1, 1}, {999, 999}, {1000, 1000}, {1001, 1000}, {1 << 30, 1000},
	} {
		got := listDeliveries(t, ds, domain.DeliveryFilter{AppID: 7, Limit: c.limit})
		if len(got) != c.want {
			t.Errorf("Deliveries(Limit %d) = %d deliveries, want %d", c.limit, len(got), c.want)
			continue
		}
		if got[0].DeliveryID != "d-0000" || got[len(got)-1].DeliveryID != dls[c.want-1].DeliveryID {
			t.Errorf("Deliveries(Limit %d) = %s..%s, want the first %d", c.limit, got[0].DeliveryID, got[len(got)-1].DeliveryID, c.want)
		}
	}
	for _, c := range []struct{ limit, want int }{{0, 100}, {-1, 100}, {7, 7}} {
		if got := due(t, ds, at(1_000_000), c.limit); len(got) != c.want || got[0].DeliveryID != "d-0000" {
			t.Errorf("Due(limit %d) = %d deliveries, want the first %d", c.limit, len(got), c.want)
		}
	}
}

func testDue(t *testing.T, s Store) {
	ds := deliveryStore(t, s)
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
	putDeliveries(t, ds, a, b, c, d, k,
		mk(1, 10, domain.DeliveryDelivered, ptr(at(10))),
		mk(1, 11, domain.DeliveryAbandoned, ptr(at(10))),
		mk(1, 12, domain.DeliveryDeadLetter, ptr(at(10))),
		mk(1, 13, domain.DeliverySkipped, ptr(at(10))),
		mk(1, 14, domain.DeliveryPending, nil),
		mk(1, 15, domain.DeliveryRetrying, nil),
	)
	ids := func(ds ...projections.Delivery) []string { return deliveryIDs(ds) }
	for _, c := range []struct {
		now   time.Time
		limit int
		want  []string
	}{
		{at(100), 10, ids(b, k, c, a)}, // NextAttemptAt == now is due
		{at(100).In(time.FixedZone("CST", 8*3600)), 10, ids(b, k, c, a)},
		{at(99), 10, ids(b, k)},
		{at(49), 10, nil},
		{at(1000), 10, ids(b, k, c, a, d)},
		{at(1000), 2, ids(b, k)},
		{at(1000), 0, ids(b, k, c, a, d)},
		{at(1000), -1, ids(b, k, c, a, d)},
		{time.Time{}, 10, nil},
	} {
		wantIDs(t, fmt.Sprintf("Due(%v, %d)", c.now, c.limit), due(t, ds, c.now, c.limit), c.want)
	}
	wantDeliveries(t, "Due rows", due(t, ds, at(60), 10), []projections.Delivery{b, k})

	// Attempting moves deliveries out of the queue or later in it.
	b2 := b
	b2.Status, b2.NextAttemptAt, b2.Attempts = domain.DeliveryDelivered, nil, 1
	a2 := a
	a2.Status, a2.NextAttemptAt, a2.Attempts = domain.DeliveryRetrying, ptr(at(300)), 1
	putDeliveries(t, ds, b2, a2)
	wantIDs(t, "Due after attempts", due(t, ds, at(1000), 10), ids(k, c, d, a2))
	wantIDs(t, "Due(at(100)) after attempts", due(t, ds, at(100), 10), ids(k, c))

	// A resend brings a finished delivery back.
	b3 := b2
	b3.Status, b3.NextAttemptAt = domain.DeliveryPending, ptr(at(1))
	putDeliveries(t, ds, b3)
	wantIDs(t, "Due after resend", due(t, ds, at(100), 10), ids(b3, k, c))
}

func testNextDue(t *testing.T, s Store) {
	ds := deliveryStore(t, s)
	wantNextDue(t, ds, time.Time{}, false)
	done := dlv(1, 1)
	done.Status, done.NextAttemptAt = domain.DeliveryDelivered, ptr(at(1))
	skipped := dlv(1, 2)
	skipped.Status, skipped.NextAttemptAt = domain.DeliverySkipped, ptr(at(2))
	unscheduled := dlv(1, 3)
	unscheduled.NextAttemptAt = nil
	putDeliveries(t, ds, done, skipped, unscheduled)
	wantNextDue(t, ds, time.Time{}, false)

	p := dlv(1, 4)
	p.NextAttemptAt = ptr(at(50))
	r := dlv(2, 5)
	r.Status, r.NextAttemptAt = domain.DeliveryRetrying, ptr(at(20).In(time.FixedZone("CST", 8*3600)))
	putDeliveries(t, ds, p, r)
	wantNextDue(t, ds, at(20), true)

	r.Status, r.NextAttemptAt = domain.DeliveryAbandoned, nil
	putDeliveries(t, ds, r)
	wantNextDue(t, ds, at(50), true)

	p.NextAttemptAt = ptr(at(70))
	putDeliveries(t, ds, p)
	wantNextDue(t, ds, at(70), true)

	p.Status = domain.DeliveryDelivered
	putDeliveries(t, ds, p)
	wantNextDue(t, ds, time.Time{}, false)
}

func testCountByStatus(t *testing.T, s Store) {
	ds := deliveryStore(t, s)
	wantCounts(t, ds, map[string]int{})
	var dls []projections.Delivery
	for n := range 10 {
		d := dlv(int64(1+n%2), n)
		d.Status = allStatuses[n%4] // pending, retrying, delivered, abandoned
		dls = append(dls, d)
	}
	putDeliveries(t, ds, dls...)
	wantCounts(t, ds, map[string]int{
		domain.DeliveryPending: 3, domain.DeliveryRetrying: 3,
		domain.DeliveryDelivered: 2, domain.DeliveryAbandoned: 2,
	})

	// Statuses move; a status left with no delivery is not listed.
	dls[0].Status, dls[4].Status, dls[8].Status = domain.DeliveryDeadLetter, domain.DeliveryDelivered, domain.DeliveryDelivered
	putDeliveries(t, ds, dls[0], dls[4], dls[8])
	wantCounts(t, ds, map[string]int{
		domain.DeliveryRetrying: 3, domain.DeliveryDelivered: 4,
		domain.DeliveryAbandoned: 2, domain.DeliveryDeadLetter: 1,
	})
}

func testLastSource(t *testing.T, s Store) {
	ctx := context.Background()
	ds := deliveryStore(t, s)
	wantLastSource(t, ds, events.Position{})
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
	putDeliveries(t, ds, dls...)
	wantLastSource(t, ds, top)

	// A failed update leaves it; a committed one moves it, even down.
	err := ds.UpdateDeliveries(ctx, "deliveries", nextPos(), func(tx projections.DeliveryTx) error {
		if err := tx.PutDelivery(ctx, mk(7, events.Position{Commit: ^uint64(0), Prepare: ^uint64(0)})); err != nil {
			return err
		}
		return errors.New("no")
	})
	if err == nil {
		t.Fatal("UpdateDeliveries with a failing fn returned nil")
	}
	wantLastSource(t, ds, top)
	lowered := dls[2]
	lowered.SourcePosition = events.Position{Commit: 1, Prepare: 1}
	putDeliveries(t, ds, lowered)
	wantLastSource(t, ds, events.Position{Commit: 1<<63 + 1, Prepare: 0})

	// Two deliveries of one source event (two apps) share its position.
	twin := mk(8, events.Position{Commit: 1<<63 + 1, Prepare: 0})
	putDeliveries(t, ds, twin)
	gone := dls[3]
	gone.SourcePosition = events.Position{Commit: 2}
	putDeliveries(t, ds, gone)
	wantLastSource(t, ds, twin.SourcePosition)
}

func testAttempts(t *testing.T, s Store) {
	ds := deliveryStore(t, s)
	x, y, z := dlv(1, 1), dlv(1, 2), dlv(2, 3)
	putDeliveries(t, ds, x, y, z)
	cst := time.FixedZone("CST", 8*3600)
	a1 := projections.Attempt{DeliveryID: x.DeliveryID, Attempt: 1, At: at(10).In(cst), StatusCode: nil,
		LatencyMS: 10_000, Error: ptr("dial tcp: i/o timeout"), Outcome: "retry"}
	a2 := projections.Attempt{DeliveryID: x.DeliveryID, Attempt: 2, At: at(20), StatusCode: ptr(500),
		LatencyMS: 12, Error: ptr(""), Outcome: "retry"}
	a3 := projections.Attempt{DeliveryID: x.DeliveryID, Attempt: 3, At: at(30), StatusCode: ptr(200),
		LatencyMS: 1 << 40, Outcome: "delivered"}
	b1 := projections.Attempt{DeliveryID: y.DeliveryID, Attempt: 1, At: at(11), StatusCode: ptr(0),
		Outcome: "refused"}
	addAttempts(t, ds, a3, b1, a1) // out of order
	addAttempts(t, ds, a2)

	_, as := getDelivery(t, ds, 1, x.DeliveryID)
	wantAttempts(t, "attempts of x", as, []projections.Attempt{a1, a2, a3})
	_, as = getDelivery(t, ds, 0, y.DeliveryID)
	wantAttempts(t, "attempts of y", as, []projections.Attempt{b1})
	_, as = getDelivery(t, ds, 2, z.DeliveryID)
	wantAttempts(t, "attempts of z", as, nil)

	// Recording an attempt again (a replayed event) replaces it.
	a2b := projections.Attempt{DeliveryID: x.DeliveryID, Attempt: 2, At: at(21), StatusCode: nil,
		LatencyMS: 5, Error: nil, Outcome: "abandoned"}
	addAttempts(t, ds, a2b, a2b)
	_, as = getDelivery(t, ds, 1, x.DeliveryID)
	wantAttempts(t, "attempts of x after re-adding #2", as, []projections.Attempt{a1, a2b, a3})

	// Results are copies; replacing the delivery keeps its attempts.
	*as[0].Error = "mutated"
	*as[2].StatusCode = 1
	x.Status = domain.DeliveryDelivered
	putDeliveries(t, ds, x)
	_, as = getDelivery(t, ds, 1, x.DeliveryID)
	wantAttempts(t, "attempts of x after a caller mutated them", as, []projections.Attempt{a1, a2b, a3})
}

func testDeliveryTxReads(t *testing.T, s Store) {
	ctx := context.Background()
	ds := deliveryStore(t, s)
	d := dlv(1, 1)
	updateDeliveries(t, ds, func(tx projections.DeliveryTx) error {
		_, err := tx.Delivery(ctx, d.DeliveryID)
		wantNotFound(t, "Tx.Delivery before PutDelivery", err)
		if err := tx.PutDelivery(ctx, d); err != nil {
			return err
		}
		got, err := tx.Delivery(ctx, d.DeliveryID)
		if err != nil {
			return fmt.Errorf("Tx.Delivery after PutDelivery: %w", err)
		}
		wantDelivery(t, "Tx.Delivery after PutDelivery", got, d)

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
		wantDelivery(t, "Tx.Delivery after second PutDelivery", again, got)
		d = got
		return nil
	})
	got, as := getDelivery(t, ds, 1, d.DeliveryID)
	wantDelivery(t, "Delivery after commit", got, d)
	if len(as) != 1 {
		t.Errorf("attempts after commit = %+v, want one", as)
	}

	// A later transaction reads committed rows of any app; a not-found read
	// handled by fn does not spoil it.
	other := dlv(2, 2)
	putDeliveries(t, ds, other)
	third := dlv(3, 3)
	updateDeliveries(t, ds, func(tx projections.DeliveryTx) error {
		got, err := tx.Delivery(ctx, other.DeliveryID)
		if err != nil {
			return err
		}
		wantDelivery(t, "Tx.Delivery of another app", got, other)
		if _, err := tx.Delivery(ctx, "missing"); !errors.Is(err, projections.ErrNotFound) {
			return fmt.Errorf("Tx.Delivery(missing) = %v, want ErrNotFound", err)
		}
		return tx.PutDelivery(ctx, third)
	})
	got, _ = getDelivery(t, ds, 3, third.DeliveryID)
	wantDelivery(t, "delivery put after a not-found read", got, third)
}

func testFailedUpdateDeliveries(t *testing.T, s Store) {
	ctx := context.Background()
	ds := deliveryStore(t, s)
	m := newModel()
	a, b := dlv(1, 10), dlv(2, 11)
	b.Status, b.NextAttemptAt = domain.DeliveryRetrying, ptr(at(5))
	pos := events.Position{Commit: 70, Prepare: 70}
	attempt := projections.Attempt{DeliveryID: a.DeliveryID, Attempt: 1, At: at(3), StatusCode: ptr(500), Outcome: "retry"}
	if err := ds.UpdateDeliveries(ctx, "deliveries", pos, func(tx projections.DeliveryTx) error {
		if err := tx.PutDelivery(ctx, a); err != nil {
			return err
		}
		if err := tx.PutDelivery(ctx, b); err != nil {
			return err
		}
		return tx.AddAttempt(ctx, attempt)
	}); err != nil {
		t.Fatal(err)
	}
	m.put(a, b)
	m.addAttempt(attempt)
	nows := []time.Time{at(0), at(5), at(1010), at(1_000_000)}
	m.check(t, ds, "before", []int64{1, 2, 3}, nows)

	boom := errors.New("projector failed")
	err := ds.UpdateDeliveries(ctx, "deliveries", events.Position{Commit: 80, Prepare: 80}, func(tx projections.DeliveryTx) error {
		c := dlv(3, 12)
		c.SourcePosition, c.NextAttemptAt = events.Position{Commit: ^uint64(0)}, ptr(at(0))
		if err := tx.PutDelivery(ctx, c); err != nil {
			return err
		}
		a2 := a
		a2.AppID, a2.Status, a2.Cursor, a2.Body, a2.NextAttemptAt = 3, domain.DeliveryAbandoned, cursorAt(1), nil, nil
		if err := tx.PutDelivery(ctx, a2); err != nil {
			return err
		}
		b2 := b
		b2.NextAttemptAt = ptr(at(1))
		if err := tx.PutDelivery(ctx, b2); err != nil {
			return err
		}
		if err := tx.AddAttempt(ctx, projections.Attempt{DeliveryID: a.DeliveryID, Attempt: 1, At: at(9), Outcome: "abandoned"}); err != nil {
			return err
		}
		if err := tx.AddAttempt(ctx, projections.Attempt{DeliveryID: b.DeliveryID, Attempt: 1, At: at(9), Outcome: "retry"}); err != nil {
			return err
		}
		got, err := tx.Delivery(ctx, c.DeliveryID)
		if err != nil {
			return err
		}
		wantDelivery(t, "Tx.Delivery inside the failing update", got, c)
		return fmt.Errorf("apply event: %w", boom)
	})
	if !errors.Is(err, boom) {
		t.Fatalf("UpdateDeliveries error = %v, want one wrapping the fn's error", err)
	}
	wantCheckpoint(t, s, "deliveries", pos)
	m.check(t, ds, "after the failed update", []int64{1, 2, 3}, nows)
	_, _, err = ds.Delivery(ctx, 0, "d-0012")
	wantNotFound(t, "delivery put by the failed update", err)

	// The store is still usable.
	c := dlv(3, 12)
	putDeliveries(t, ds, c)
	m.put(c)
	m.check(t, ds, "after a later update", []int64{1, 2, 3}, nows)
}

func testDeliveryCheckpoints(t *testing.T, s Store) {
	ctx := context.Background()
	ds := deliveryStore(t, s)
	p1, p2, p3 := events.Position{Commit: 10, Prepare: 9}, events.Position{Commit: 20, Prepare: 20}, events.Position{Commit: 1 << 63, Prepare: 1}
	noop := func(projections.DeliveryTx) error { return nil }
	if err := ds.UpdateDeliveries(ctx, "webhooks", p1, noop); err != nil {
		t.Fatal(err)
	}
	wantCheckpoint(t, s, "webhooks", p1)
	// One checkpoint table: Update and UpdateDeliveries move the same names.
	update(t, s, "webhooks", p2, func(projections.UserTx) error { return nil })
	wantCheckpoint(t, s, "webhooks", p2)
	if err := ds.UpdateDeliveries(ctx, "webhooks", p3, func(tx projections.DeliveryTx) error {
		return tx.PutDelivery(ctx, dlv(1, 1))
	}); err != nil {
		t.Fatal(err)
	}
	wantCheckpoint(t, s, "webhooks", p3)
	wantCheckpoint(t, s, "other", events.Position{})
	if err := ds.UpdateDeliveries(ctx, "other", p1, func(projections.DeliveryTx) error { return errors.New("no") }); err == nil {
		t.Fatal("UpdateDeliveries with a failing fn returned nil")
	}
	wantCheckpoint(t, s, "other", events.Position{})
	wantCheckpoint(t, s, "webhooks", p3)
}

func testResetDeliveries(t *testing.T, s Store) {
	ctx := context.Background()
	ds := deliveryStore(t, s)
	d := dlv(1, 1)
	putDeliveries(t, ds, d, dlv(2, 2))
	addAttempts(t, ds, projections.Attempt{DeliveryID: d.DeliveryID, Attempt: 1, At: at(1), Outcome: "retry"})

	if err := s.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	_, _, err := ds.Delivery(ctx, 0, d.DeliveryID)
	wantNotFound(t, "Delivery after Reset", err)
	wantIDs(t, "Deliveries after Reset", listDeliveries(t, ds, domain.DeliveryFilter{}), nil)
	wantIDs(t, "Deliveries(app 1) after Reset", listDeliveries(t, ds, domain.DeliveryFilter{AppID: 1}), nil)
	wantIDs(t, "Due after Reset", due(t, ds, at(1_000_000), 0), nil)
	wantNextDue(t, ds, time.Time{}, false)
	wantCounts(t, ds, map[string]int{})
	wantLastSource(t, ds, events.Position{})
	wantCheckpoint(t, s, "deliveries", events.Position{})

	// Usable after Reset, and the old attempts do not come back.
	putDeliveries(t, ds, d)
	if _, as := getDelivery(t, ds, 1, d.DeliveryID); len(as) != 0 {
		t.Errorf("attempts after Reset and rebuild = %+v, want none", as)
	}
	wantIDs(t, "Deliveries after rebuild", listDeliveries(t, ds, domain.DeliveryFilter{}), []string{d.DeliveryID})
}

// testConcurrentDeliveries runs the projector's writes beside the
// dispatcher's and the feed's reads.
func testConcurrentDeliveries(t *testing.T, s Store) {
	ctx := context.Background()
	ds := deliveryStore(t, s)
	const writers, rounds = 3, 15
	errs := make(chan error, writers*rounds*2)
	var wg sync.WaitGroup
	for w := range writers {
		app := int64(w + 1)
		wg.Go(func() {
			proj := fmt.Sprintf("webhooks-%d", w)
			for r := range rounds {
				n := w*rounds + r
				err := ds.UpdateDeliveries(ctx, proj, events.Position{Commit: uint64(r + 1), Prepare: uint64(r + 1)}, func(tx projections.DeliveryTx) error {
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
				if _, err := ds.Due(ctx, at(1_000_000), 10); err != nil {
					errs <- fmt.Errorf("Due: %w", err)
					return
				}
				if _, err := ds.Deliveries(ctx, domain.DeliveryFilter{AppID: app}); err != nil {
					errs <- fmt.Errorf("Deliveries: %w", err)
					return
				}
				if _, _, err := ds.NextDue(ctx); err != nil {
					errs <- fmt.Errorf("NextDue: %w", err)
					return
				}
				if _, err := ds.CountByStatus(ctx); err != nil {
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
	wantCounts(t, ds, map[string]int{
		domain.DeliveryDelivered: writers * (rounds - 1),
		domain.DeliveryPending:   writers,
	})
	var wantDue []string
	for w := range writers {
		wantDue = append(wantDue, dlv(0, w*rounds+rounds-1).DeliveryID)
		wantCheckpoint(t, s, fmt.Sprintf("webhooks-%d", w), events.Position{Commit: rounds, Prepare: rounds})
		if l := listDeliveries(t, ds, domain.DeliveryFilter{AppID: int64(w + 1)}); len(l) != rounds {
			t.Errorf("deliveries of app %d = %d, want %d", w+1, len(l), rounds)
		}
	}
	wantIDs(t, "Due", due(t, ds, at(1_000_000), 0), wantDue)
}

// testDeliveriesModel drives a store with a fixed pseudo-random mix of
// creates, replaces, attempts and failed transactions, and compares every
// read with the model after each transaction.
func testDeliveriesModel(t *testing.T, s Store) {
	ctx := context.Background()
	ds := deliveryStore(t, s)
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
		d.UpdatedAt = at(10*created + rng.IntN(1000))
		return d
	}
	for round := range 30 {
		next := m.clone()
		fail := round%4 == 3
		err := ds.UpdateDeliveries(ctx, "deliveries", nextPos(), func(tx projections.DeliveryTx) error {
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
					wantDelivery(t, "Tx.Delivery", got, d)
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
		m.check(t, ds, fmt.Sprintf("round %d", round), apps, nows)
		if t.Failed() {
			return
		}
	}
}

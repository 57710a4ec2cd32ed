package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// The helpers every read model's cases share: one way to write a read model, to
// read expecting success, to compare rows and lists of rows, to check a
// failed Update, paging and limits.

// ctx is the context of every call the suite makes.
var ctx = context.Background()

var base = time.Date(2024, 3, 5, 8, 9, 10, 123456000, time.UTC)

func ptr[T any](v T) *T { return &v }

func at(us int) time.Time { return base.Add(time.Duration(us) * time.Microsecond) }

// fixturePos numbers the fixture writes, so each moves the checkpoint on.
var fixturePos atomic.Uint64

func nextPos() events.Position {
	n := fixturePos.Add(1)
	return events.Position{Commit: n, Prepare: n}
}

// ---- writing a read model ----

// readModel is one read model's Update method and checkpoint name, so that one
// set of helpers writes every read model.
type readModel[T any] struct {
	name   string
	update func(context.Context, string, events.Position, func(T) error) error
}

func usersOf(s Store) readModel[projections.UserTx] {
	return readModel[projections.UserTx]{"users", s.Update}
}
func deliveriesOf(s Store) readModel[projections.DeliveryTx] {
	return readModel[projections.DeliveryTx]{"deliveries", s.UpdateDeliveries}
}
func reportsOf(s Store) readModel[projections.ReportTx] {
	return readModel[projections.ReportTx]{"reports", s.UpdateReports}
}
func ordersOf(s Store) readModel[projections.OrderTx] {
	return readModel[projections.OrderTx]{"orders", s.UpdateOrders}
}
func benefitsOf(s Store) readModel[projections.BenefitTx] {
	return readModel[projections.BenefitTx]{"benefits", s.UpdateBenefits}
}

// writeAt runs fn in one Update of f under projection at pos, which must succeed.
func writeAt[T any](t *testing.T, f readModel[T], projection string, pos events.Position, fn func(T) error) {
	t.Helper()
	if err := f.update(ctx, projection, pos, fn); err != nil {
		t.Fatalf("Update(%q, %v): %v", projection, pos, err)
	}
}

// write runs fn in one Update of f at the next fixture position, which must succeed.
func write[T any](t *testing.T, f readModel[T], fn func(T) error) {
	t.Helper()
	writeAt(t, f, f.name, nextPos(), fn)
}

// try is write for an Update expected to fail.
func try[T any](f readModel[T], fn func(T) error) error { return f.update(ctx, f.name, nextPos(), fn) }

// putRows writes rows through put (a Tx method expression) in one Update of f.
func putRows[T, R any](t *testing.T, f readModel[T], put func(T, context.Context, R) error, rows ...R) {
	t.Helper()
	write(t, f, func(tx T) error {
		for _, r := range rows {
			if err := put(tx, ctx, r); err != nil {
				return fmt.Errorf("put %T %v: %w", r, keyOf(r), err)
			}
		}
		return nil
	})
}

// firstErr is the first of the errors of several writes, for an Update
// whose writes must all succeed.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// failedUpdate is the scenario every read model passes: seed is written at one
// position, then an Update whose fn writes through spoil and fails; the
// error must wrap fn's, the checkpoint stay at seed's, and check (run
// before and after) find what seed wrote and nothing of spoil's.
func failedUpdate[T any](t *testing.T, s Store, f readModel[T], seed, spoil func(T) error, check func(when string)) {
	t.Helper()
	pos := nextPos()
	writeAt(t, f, f.name, pos, seed)
	check("before the failed Update")
	boom := errors.New("projector failed")
	err := f.update(ctx, f.name, nextPos(), func(tx T) error {
		if err := spoil(tx); err != nil {
			return err
		}
		return fmt.Errorf("apply event: %w", boom)
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update error = %v, want one wrapping the fn's error", err)
	}
	wantCheckpoint(t, s, f.name, pos)
	check("after the failed Update")
}

// ---- reading ----

// must unwraps a read the case expects to succeed: must(s.User(ctx, 1, 10))(t).
func must[R any](r R, err error) func(*testing.T) R {
	return func(t *testing.T) R {
		t.Helper()
		if err != nil {
			t.Fatalf("reading %T: %v", r, err)
		}
		return r
	}
}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, projections.ErrNotFound) {
		t.Errorf("%s: err = %v, want ErrNotFound", what, err)
	}
}

func wantCheckpoint(t *testing.T, s Store, projection string, want events.Position) {
	t.Helper()
	if got := must(s.Checkpoint(ctx, projection))(t); got != want {
		t.Errorf("Checkpoint(%q) = %v, want %v", projection, got, want)
	}
}

// ---- comparing rows ----

// keyOf is the identity of a row, by which lists are compared and paged.
func keyOf(row any) any {
	switch r := row.(type) {
	case projections.User:
		return r.OpenUserID
	case projections.Group:
		return r.FamilyGroupID
	case projections.Member:
		return r.MemberID
	case projections.Delivery:
		return r.DeliveryID
	case domain.DueDelivery:
		return r.DeliveryID
	case projections.Attempt:
		return r.Attempt
	case projections.Report:
		return r.ReportID
	case projections.Goods:
		return r.GoodsID
	case projections.Order:
		return r.OrderID
	case projections.BenefitItem:
		return r.BenefitItemID
	case projections.ServiceProvider:
		return r.ProviderID
	case projections.Card:
		return r.CardNumber
	case projections.Fulfillment:
		return r.RecordID
	case projections.AuditFact:
		return r.Seq
	}
	panic(fmt.Sprintf("storetest: no key for %T", row))
}

func keys[R any](rows []R) []any {
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = keyOf(r)
	}
	return out
}

// ids lists the keys of rows keyed by an int64.
func ids[R any](rows []R) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = keyOf(r).(int64)
	}
	return out
}

// strIDs lists the keys of rows keyed by a string.
func strIDs[R any](rows []R) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = keyOf(r).(string)
	}
	return out
}

// sameTime compares instants at the microsecond precision every store keeps
// and insists on UTC, which the API renders without conversion.
func sameTime(got, want time.Time) bool {
	return got.Location() == time.UTC &&
		got.Truncate(time.Microsecond).Equal(want.Truncate(time.Microsecond))
}

// jsonFields hold JSON kept byte for byte, where nil (JSON null) must come
// back nil, never as an empty slice; other bytes compare as bytes.
var jsonFields = map[string]bool{"Report.RawData": true, "Report.InterpretationDetail": true}

var timeType = reflect.TypeFor[time.Time]()

// diff lists every field in which got differs from want: instants compare
// by sameTime, pointers must be nil exactly when want's are, slices read
// from a store are never nil, and everything else compares by value.
func diff(got, want any) []string {
	return diffValue("", "", reflect.ValueOf(got), reflect.ValueOf(want))
}

func diffValue(path, field string, got, want reflect.Value) []string {
	bad := func(g, w any) []string { return []string{fmt.Sprintf("%s: got %v, want %v", path, g, w)} }
	switch {
	case got.Type() == timeType:
		if g, w := got.Interface().(time.Time), want.Interface().(time.Time); !sameTime(g, w) {
			return bad(g, w)
		}
	case got.Kind() == reflect.Pointer:
		if got.IsNil() || want.IsNil() {
			if got.IsNil() != want.IsNil() {
				return bad(show(got), show(want))
			}
			return nil
		}
		return diffValue(path, field, got.Elem(), want.Elem())
	case got.Type() == reflect.TypeFor[[]byte]():
		g, w := got.Bytes(), want.Bytes()
		if jsonFields[field] && len(w) == 0 && g != nil || !bytes.Equal(g, w) {
			return bad(fmt.Sprintf("%d bytes %.60q (nil: %v)", len(g), g, g == nil), fmt.Sprintf("%d bytes %.60q", len(w), w))
		}
	case got.Kind() == reflect.Slice:
		if got.IsNil() || got.Len() != want.Len() {
			return bad(fmt.Sprintf("%+v (nil: %v)", got, got.IsNil()), fmt.Sprintf("%+v", want))
		}
		var d []string
		for i := range got.Len() {
			d = append(d, diffValue(fmt.Sprintf("%s[%d]", path, i), "", got.Index(i), want.Index(i))...)
		}
		return d
	case got.Kind() == reflect.Struct:
		var d []string
		for i := range got.NumField() {
			f := got.Type().Field(i)
			d = append(d, diffValue(joinPath(path, f.Name), got.Type().Name()+"."+f.Name, got.Field(i), want.Field(i))...)
		}
		return d
	case !got.Equal(want):
		return bad(got, want)
	}
	return nil
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func show(p reflect.Value) string {
	if p.IsNil() {
		return "nil"
	}
	return fmt.Sprintf("%v", p.Elem())
}

// wantRow reports every field in which got differs from want.
func wantRow[R any](t *testing.T, what string, got, want R) {
	t.Helper()
	for _, d := range diff(got, want) {
		t.Errorf("%s: %s", what, d)
	}
}

// wantRows checks a list: the same rows in the same order, every field alike.
func wantRows[R any](t *testing.T, what string, got, want []R) {
	t.Helper()
	if g, w := keys(got), keys(want); !slices.Equal(g, w) {
		t.Errorf("%s = %v, want %v", what, g, w)
		return
	}
	for i := range got {
		wantRow(t, fmt.Sprintf("%s[%d]", what, i), got[i], want[i])
	}
}

// wantIDs checks which rows a list holds, in order, by key; want is a
// slice of keys, or nil for none.
func wantIDs[R any](t *testing.T, what string, got []R, want any) {
	t.Helper()
	var w []any
	if v := reflect.ValueOf(want); v.IsValid() {
		for i := range v.Len() {
			w = append(w, v.Index(i).Interface())
		}
	}
	if g := keys(got); !slices.Equal(g, w) {
		t.Errorf("%s = %v, want %v", what, g, w)
	}
}

// ---- lists: paging and limits ----

// cursorOf is the value a list's After cursor takes from the row last seen.
func cursorOf(row any) any {
	if d, ok := row.(projections.Delivery); ok {
		return d.Cursor
	}
	return keyOf(row)
}

// isAfter tells whether a row's cursor c lies strictly after the cursor after.
func isAfter(c, after any) bool {
	if p, ok := c.(events.Position); ok {
		return after.(events.Position).Less(p)
	}
	return c.(int64) > after.(int64)
}

// setField sets the named field of a filter (Limit or After).
func setField[F any](f *F, name string, v any) {
	reflect.ValueOf(f).Elem().FieldByName(name).Set(reflect.ValueOf(v))
}

// pageAll lists f page by page of limit, each page starting after the last
// row seen, until an empty page; every page must respect the limit and the
// cursor, list no row twice, and the walk must end within maxPages.
func pageAll[F, R any](t *testing.T, list func(F) []R, f F, limit, maxPages int) []R {
	t.Helper()
	var got []R
	seen := map[any]bool{}
	page := f
	setField(&page, "Limit", limit)
	for range maxPages {
		l := list(page)
		if len(l) == 0 {
			return got
		}
		if len(l) > limit {
			t.Fatalf("%+v: page of %d, limit %d", page, len(l), limit)
		}
		after := reflect.ValueOf(page).FieldByName("After").Interface()
		for _, r := range l {
			if seen[keyOf(r)] {
				t.Fatalf("%+v: %v listed twice", page, keyOf(r))
			}
			if !isAfter(cursorOf(r), after) {
				t.Fatalf("%+v: %v at %v is not after the cursor", page, keyOf(r), cursorOf(r))
			}
			seen[keyOf(r)] = true
			got = append(got, r)
			setField(&page, "After", cursorOf(r))
		}
	}
	t.Fatalf("%+v: paging did not end", f)
	return nil
}

// wantPaging checks that paging f by every page size visits want once each, in order.
func wantPaging[F, R any](t *testing.T, list func(F) []R, f F, want []R) {
	t.Helper()
	for _, limit := range []int{1, 2, 3, 7, 100} {
		got := pageAll(t, list, f, limit, len(want)+2) // one page per row at worst, then the empty one
		if g, w := keys(got), keys(want); !slices.Equal(g, w) {
			t.Errorf("%+v paged by %d = %v, want %v", f, limit, g, w)
		}
	}
}

// wantLimits checks a list's page sizes: 100 by default, at most 1000, the
// first rows of all (in list order, over 1000 of them) for each filter.
func wantLimits[F, R any](t *testing.T, list func(F) []R, filters []F, all []R) {
	t.Helper()
	for _, c := range []struct{ limit, want int }{
		{0, 100}, {-1, 100}, {1, 1}, {999, 999}, {1000, 1000}, {1001, 1000}, {1 << 30, 1000},
	} {
		for _, f := range filters {
			setField(&f, "Limit", c.limit)
			got := list(f)
			if len(got) != c.want || keyOf(got[0]) != keyOf(all[0]) || keyOf(got[len(got)-1]) != keyOf(all[c.want-1]) {
				t.Errorf("list(%+v) = %d rows, want the first %d", f, len(got), c.want)
			}
		}
	}
}

// lister turns a store's list method into one that fails the test on error.
func lister[F, R any](t *testing.T, list func(context.Context, F) ([]R, error)) func(F) []R {
	return func(f F) []R {
		t.Helper()
		l, err := list(ctx, f)
		if err != nil {
			t.Fatalf("list(%+v): %v", f, err)
		}
		return l
	}
}

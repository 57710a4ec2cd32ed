package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// The report and nonce cases of Run. Every read-model store is also the
// report store and the nonce store, and its Update transaction is also a
// projections.ReportTx, so a store without them fails these cases.

// ---- report fixtures ----

// awkwardJSON is JSON that any parse-and-print would change: key order,
// duplicate keys, whitespace of every kind, numbers beyond float64 and
// int64, escapes that decode to the same text, and trailing spaces.
const awkwardJSON = "{\"z\": 1,\n\t\"a\" :[ 123456789012345678901234567890.123456789, 1.0, -0, 1E+400, 0.10e-400 ],\r\n" +
	` "s": "\u00e9\ud83d\ude00 \"q\" \/ \\ é汉字🙂\u0000", "dup": 1, "dup": 2,` +
	"\n  \"big\": 18446744073709551616, \"e\": {}, \"l\": [ ], \"n\": null }  "

// bigJSON is about 1 MiB of JSON, the largest raw data a report carries.
func bigJSON() []byte {
	var b bytes.Buffer
	b.WriteString("[\n")
	for i := 0; b.Len() < 1<<20; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, ` {"i" : %d, "v": 12345678901234567890.%09d, "t":"\u6c49 %x"}`, i, i, i)
	}
	b.WriteString("\n]")
	return b.Bytes()
}

// report is report id of user in app on day, with the pointers a typical
// report has set.
func report(app, user, id int64, day string) projections.Report {
	return projections.Report{
		ReportID:      id,
		AppID:         app,
		OpenUserID:    user,
		ReportType:    ptr("BLOOD_PRESSURE"),
		DeviceSN:      ptr(fmt.Sprintf("SN-%d", id)),
		IsViewed:      id%2 == 0,
		UploadedAt:    at(int(id)),
		ExaminedAt:    ptr(at(int(id) - 1)),
		RawData:       fmt.Appendf(nil, `{"id":%d, "sys": 120 }`, id),
		Day:           day,
		UpdatedAt:     at(int(id) + 1),
		MeasurementNo: ptr(fmt.Sprintf("M-%d", id)),
	}
}

// ---- report helpers ----

func reportStore(t *testing.T, s Store) projections.ReportStore {
	t.Helper()
	rs, ok := s.(projections.ReportStore)
	if !ok {
		t.Fatalf("%T does not implement projections.ReportStore", s)
	}
	return rs
}

func nonceStore(t *testing.T, s Store) projections.NonceStore {
	t.Helper()
	ns, ok := s.(projections.NonceStore)
	if !ok {
		t.Fatalf("%T does not implement projections.NonceStore", s)
	}
	return ns
}

func updateReports(t *testing.T, s Store, fn func(projections.ReportTx) error) {
	t.Helper()
	if err := s.UpdateReports(context.Background(), "reports", nextPos(), fn); err != nil {
		t.Fatalf("UpdateReports: %v", err)
	}
}

func putReports(t *testing.T, s Store, rs ...projections.Report) {
	t.Helper()
	updateReports(t, s, func(tx projections.ReportTx) error {
		for _, r := range rs {
			if err := tx.PutReport(context.Background(), r); err != nil {
				return fmt.Errorf("PutReport %d: %w", r.ReportID, err)
			}
		}
		return nil
	})
}

func getReport(t *testing.T, rs projections.ReportStore, app, id int64) projections.Report {
	t.Helper()
	r, err := rs.Report(context.Background(), app, id)
	if err != nil {
		t.Fatalf("Report(%d, %d): %v", app, id, err)
	}
	return r
}

func reportsOfDay(t *testing.T, rs projections.ReportStore, app, user int64, day string) []projections.Report {
	t.Helper()
	out, err := rs.ReportsOfDay(context.Background(), app, user, day)
	if err != nil {
		t.Fatalf("ReportsOfDay(%d, %d, %q): %v", app, user, day, err)
	}
	return out
}

func reportIDs(rs []projections.Report) []int64 {
	ids := make([]int64, len(rs))
	for i, r := range rs {
		ids[i] = r.ReportID
	}
	return ids
}

func wantReportIDs(t *testing.T, what string, got []projections.Report, want []int64) {
	t.Helper()
	if ids := reportIDs(got); !equalIDs(ids, want) {
		t.Errorf("%s = %v, want %v", what, ids, want)
	}
}

// sameJSON compares JSON bytes exactly; nil (JSON null) must come back nil,
// never as an empty slice.
func sameJSON(got, want []byte) bool {
	if len(want) == 0 {
		return got == nil
	}
	return bytes.Equal(got, want)
}

func showJSON(b []byte) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprintf("%d bytes %.60q", len(b), b)
}

func diffReport(got, want projections.Report) []string {
	var d []string
	f := func(name string, ok bool, g, w any) {
		if !ok {
			d = append(d, fmt.Sprintf("%s: got %v, want %v", name, g, w))
		}
	}
	f("ReportID", got.ReportID == want.ReportID, got.ReportID, want.ReportID)
	f("AppID", got.AppID == want.AppID, got.AppID, want.AppID)
	f("OpenUserID", got.OpenUserID == want.OpenUserID, got.OpenUserID, want.OpenUserID)
	f("OpenMemberID", sameInt(got.OpenMemberID, want.OpenMemberID), show(got.OpenMemberID), show(want.OpenMemberID))
	f("RequestReportID", sameStr(got.RequestReportID, want.RequestReportID), show(got.RequestReportID), show(want.RequestReportID))
	f("MeasurementNo", sameStr(got.MeasurementNo, want.MeasurementNo), show(got.MeasurementNo), show(want.MeasurementNo))
	f("DeviceSN", sameStr(got.DeviceSN, want.DeviceSN), show(got.DeviceSN), show(want.DeviceSN))
	f("ReportType", sameStr(got.ReportType, want.ReportType), show(got.ReportType), show(want.ReportType))
	f("FilePath", sameStr(got.FilePath, want.FilePath), show(got.FilePath), show(want.FilePath))
	f("InterpretationResult", sameStr(got.InterpretationResult, want.InterpretationResult),
		show(got.InterpretationResult), show(want.InterpretationResult))
	f("InterpretationDetail", sameJSON(got.InterpretationDetail, want.InterpretationDetail),
		showJSON(got.InterpretationDetail), showJSON(want.InterpretationDetail))
	f("InterpretationMethod", sameStr(got.InterpretationMethod, want.InterpretationMethod),
		show(got.InterpretationMethod), show(want.InterpretationMethod))
	f("IsViewed", got.IsViewed == want.IsViewed, got.IsViewed, want.IsViewed)
	f("UploadedAt", sameTime(got.UploadedAt, want.UploadedAt), got.UploadedAt, want.UploadedAt)
	f("ExaminedAt", sameTimePtr(got.ExaminedAt, want.ExaminedAt), show(got.ExaminedAt), show(want.ExaminedAt))
	f("InterpretedAt", sameTimePtr(got.InterpretedAt, want.InterpretedAt), show(got.InterpretedAt), show(want.InterpretedAt))
	f("PointsCode", sameStr(got.PointsCode, want.PointsCode), show(got.PointsCode), show(want.PointsCode))
	f("DataSource", sameStr(got.DataSource, want.DataSource), show(got.DataSource), show(want.DataSource))
	f("OperatorName", sameStr(got.OperatorName, want.OperatorName), show(got.OperatorName), show(want.OperatorName))
	f("OperatorPlatformUserID", sameInt(got.OperatorPlatformUserID, want.OperatorPlatformUserID),
		show(got.OperatorPlatformUserID), show(want.OperatorPlatformUserID))
	f("RawData", sameJSON(got.RawData, want.RawData), showJSON(got.RawData), showJSON(want.RawData))
	f("Day", got.Day == want.Day, got.Day, want.Day)
	f("UpdatedAt", sameTime(got.UpdatedAt, want.UpdatedAt), got.UpdatedAt, want.UpdatedAt)
	return d
}

func wantReport(t *testing.T, what string, got, want projections.Report) {
	t.Helper()
	for _, d := range diffReport(got, want) {
		t.Errorf("%s: %s", what, d)
	}
}

func useNonce(t *testing.T, ns projections.NonceStore, scope, nonce string, expires time.Time) bool {
	t.Helper()
	fresh, err := ns.Use(context.Background(), scope, nonce, expires)
	if err != nil {
		t.Fatalf("Use(%q, %q): %v", scope, nonce, err)
	}
	return fresh
}

func wantUse(t *testing.T, ns projections.NonceStore, what, scope, nonce string, expires time.Time, want bool) {
	t.Helper()
	if got := useNonce(t, ns, scope, nonce, expires); got != want {
		t.Errorf("%s: Use(%q, %q) = %v, want %v", what, scope, nonce, got, want)
	}
}

// ---- report cases ----

func testReportRoundTrip(t *testing.T, s Store) {
	ctx := context.Background()
	rs := reportStore(t, s)
	cst := time.FixedZone("CST", 8*3600)
	full := projections.Report{
		ReportID:               1<<63 - 1,
		AppID:                  1 << 40,
		OpenUserID:             -7,
		OpenMemberID:           ptr(int64(1<<62 + 3)),
		RequestReportID:        ptr("req-渠道-🙂"),
		MeasurementNo:          ptr("MN-0001\ttab"),
		DeviceSN:               ptr("SN/ü/1"),
		ReportType:             ptr("ECG"),
		FilePath:               ptr("https://cdn.example/r/1.pdf?x=1&y=2"),
		InterpretationResult:   ptr("正常 normal\nline two"),
		InterpretationDetail:   []byte(awkwardJSON),
		InterpretationMethod:   ptr("AI"),
		IsViewed:               true,
		UploadedAt:             time.Date(2024, 3, 5, 23, 59, 59, 999999000, cst),
		ExaminedAt:             ptr(time.Date(1999, 12, 31, 23, 59, 59, 1000, time.UTC)),
		InterpretedAt:          ptr(time.Date(2038, 1, 19, 3, 14, 8, 123456000, time.FixedZone("X", -7*3600))),
		PointsCode:             ptr("PC-9"),
		DataSource:             ptr("plugin"),
		OperatorName:           ptr("Zoë 王"),
		OperatorPlatformUserID: ptr(int64(-1)),
		RawData:                []byte(awkwardJSON + "\n"),
		Day:                    "2024-03-05",
		UpdatedAt:              at(3),
	}
	bare := projections.Report{
		ReportID:   -5,
		AppID:      1 << 40,
		OpenUserID: -7,
		UploadedAt: at(0),
		Day:        "2024-03-05",
		UpdatedAt:  at(0),
	}
	zeroes := projections.Report{ // zero values are set, not nil
		ReportID:               0,
		AppID:                  1 << 40,
		OpenUserID:             -7,
		OpenMemberID:           ptr(int64(0)),
		RequestReportID:        ptr(""),
		MeasurementNo:          ptr(""),
		DeviceSN:               ptr(""),
		ReportType:             ptr(""),
		FilePath:               ptr(""),
		InterpretationResult:   ptr(""),
		InterpretationDetail:   []byte("null"),
		InterpretationMethod:   ptr(""),
		ExaminedAt:             ptr(time.Time{}.UTC()),
		InterpretedAt:          ptr(at(0)),
		PointsCode:             ptr(""),
		DataSource:             ptr(""),
		OperatorName:           ptr(""),
		OperatorPlatformUserID: ptr(int64(0)),
		RawData:                []byte(`""`),
		Day:                    "2024-03-05",
		UpdatedAt:              at(0),
	}
	big := report(1<<40, -7, 7, "2024-03-06")
	big.RawData, big.InterpretationDetail = bigJSON(), bigJSON()

	updateReports(t, s, func(tx projections.ReportTx) error {
		// The caller may reuse its buffers once PutReport returns.
		r := full
		r.RawData, r.InterpretationDetail = slices.Clone(full.RawData), slices.Clone(full.InterpretationDetail)
		r.OperatorName = ptr(*full.OperatorName)
		if err := tx.PutReport(ctx, r); err != nil {
			return err
		}
		r.RawData[0], r.InterpretationDetail[0] = 'X', 'X'
		*r.OperatorName = "reused"
		for _, r := range []projections.Report{bare, zeroes, big} {
			if err := tx.PutReport(ctx, r); err != nil {
				return err
			}
		}
		return nil
	})

	for _, want := range []projections.Report{full, bare, zeroes, big} {
		wantReport(t, fmt.Sprintf("Report(%d)", want.ReportID), getReport(t, rs, want.AppID, want.ReportID), want)
	}
	day := reportsOfDay(t, rs, 1<<40, -7, "2024-03-05")
	wantReportIDs(t, "ReportsOfDay", day, []int64{-5, 0, 1<<63 - 1})
	if len(day) == 3 {
		wantReport(t, "ReportsOfDay[bare]", day[0], bare)
		wantReport(t, "ReportsOfDay[zeroes]", day[1], zeroes)
		wantReport(t, "ReportsOfDay[full]", day[2], full)
	}
	if l := reportsOfDay(t, rs, 1<<40, -7, "2024-03-06"); len(l) != 1 {
		t.Errorf("ReportsOfDay(big's day) = %v, want [7]", reportIDs(l))
	} else {
		wantReport(t, "ReportsOfDay[big]", l[0], big)
	}

	// Inside a transaction too; what it reads is a copy.
	updateReports(t, s, func(tx projections.ReportTx) error {
		got, err := tx.Report(ctx, full.ReportID)
		if err != nil {
			return err
		}
		wantReport(t, "Tx.Report", got, full)
		got.RawData[1] ^= 0xff
		*got.OpenMemberID, *got.ExaminedAt = 1, at(9)
		return nil
	})

	// The store owns its copies: changing what was read changes nothing.
	got := getReport(t, rs, full.AppID, full.ReportID)
	got.RawData[2] ^= 0xff
	got.InterpretationDetail[2] ^= 0xff
	*got.RequestReportID, *got.InterpretedAt, *got.OperatorPlatformUserID = "mutated", at(1), 5
	for _, r := range reportsOfDay(t, rs, 1<<40, -7, "2024-03-05") {
		if len(r.RawData) > 0 {
			r.RawData[0] ^= 0xff
		}
		if r.DeviceSN != nil {
			*r.DeviceSN = "mutated"
		}
	}
	wantReport(t, "Report after callers mutated results", getReport(t, rs, full.AppID, full.ReportID), full)
	wantReport(t, "Report(zeroes) after callers mutated results", getReport(t, rs, zeroes.AppID, zeroes.ReportID), zeroes)
}

func testPutReportReplaces(t *testing.T, s Store) {
	ctx := context.Background()
	rs := reportStore(t, s)
	old := report(1, 10, 5, "2024-03-05")
	old.OpenMemberID, old.RequestReportID, old.FilePath = ptr(int64(77)), ptr("req"), ptr("/f")
	old.InterpretationResult, old.InterpretationDetail = ptr("ok"), []byte(`{"a":1}`)
	old.InterpretationMethod, old.InterpretedAt = ptr("DOCTOR"), ptr(at(50))
	old.PointsCode, old.DataSource, old.OperatorName, old.OperatorPlatformUserID = ptr("p"), ptr("d"), ptr("o"), ptr(int64(9))
	other := report(1, 10, 6, "2024-03-05")
	putReports(t, s, old, other)

	// Every field changes, the pointers and RawData back to nil (an empty
	// InterpretationDetail is JSON null too); the report moves to another
	// app, user and day.
	repl := projections.Report{
		ReportID:             old.ReportID,
		AppID:                2,
		OpenUserID:           20,
		InterpretationDetail: []byte{},
		IsViewed:             !old.IsViewed,
		UploadedAt:           at(70),
		Day:                  "2024-03-06",
		UpdatedAt:            at(71),
	}
	putReports(t, s, repl)
	want := repl
	want.InterpretationDetail = nil
	wantReport(t, "replaced report", getReport(t, rs, 2, repl.ReportID), want)
	_, err := rs.Report(ctx, 1, repl.ReportID)
	wantNotFound(t, "Report in the old app after replace", err)
	wantReportIDs(t, "old user's old day", reportsOfDay(t, rs, 1, 10, "2024-03-05"), []int64{6})
	wantReportIDs(t, "new user's new day", reportsOfDay(t, rs, 2, 20, "2024-03-06"), []int64{5})
	wantReportIDs(t, "new user's old day", reportsOfDay(t, rs, 2, 20, "2024-03-05"), nil)

	// Only the day changes: the report moves between the user's days.
	moved := repl
	moved.Day = "2024-03-07"
	putReports(t, s, moved)
	wantReportIDs(t, "day left", reportsOfDay(t, rs, 2, 20, "2024-03-06"), nil)
	wantReportIDs(t, "day joined", reportsOfDay(t, rs, 2, 20, "2024-03-07"), []int64{5})

	// Setting the pointers again, then putting the same row twice.
	back := old
	back.Day = moved.Day
	putReports(t, s, back, back)
	wantReport(t, "report put twice", getReport(t, rs, 1, back.ReportID), back)
	wantReportIDs(t, "after identical puts", reportsOfDay(t, rs, 1, 10, "2024-03-07"), []int64{5})
	wantReportIDs(t, "moved-from user", reportsOfDay(t, rs, 2, 20, "2024-03-07"), nil)
}

func testReportTxReads(t *testing.T, s Store) {
	ctx := context.Background()
	rs := reportStore(t, s)
	r := report(1, 10, 1, "2024-03-05")
	updateReports(t, s, func(tx projections.ReportTx) error {
		_, err := tx.Report(ctx, r.ReportID)
		wantNotFound(t, "Tx.Report before PutReport", err)
		if err := tx.PutReport(ctx, r); err != nil {
			return err
		}
		got, err := tx.Report(ctx, r.ReportID)
		if err != nil {
			return fmt.Errorf("Tx.Report after PutReport: %w", err)
		}
		wantReport(t, "Tx.Report after PutReport", got, r)

		// Read, change, write, read again: the projector's partial update.
		got.IsViewed, got.InterpretationResult, got.RawData = true, ptr("viewed"), nil
		if err := tx.PutReport(ctx, got); err != nil {
			return err
		}
		again, err := tx.Report(ctx, r.ReportID)
		if err != nil {
			return err
		}
		wantReport(t, "Tx.Report after second PutReport", again, got)
		r = got
		return nil
	})
	wantReport(t, "Report after commit", getReport(t, rs, 1, r.ReportID), r)

	// Families are separate transactions (each its own Update and
	// checkpoint): no case writes two families at once.

	// A later transaction reads committed rows of any app; a not-found read
	// handled by fn does not spoil it.
	other := report(2, 20, 3, "2024-03-05")
	putReports(t, s, other)
	third := report(3, 30, 4, "2024-03-05")
	updateReports(t, s, func(tx projections.ReportTx) error {
		got, err := tx.Report(ctx, other.ReportID)
		if err != nil {
			return err
		}
		wantReport(t, "Tx.Report of another app", got, other)
		if _, err := tx.Report(ctx, 424242); !errors.Is(err, projections.ErrNotFound) {
			return fmt.Errorf("Tx.Report(424242) = %v, want ErrNotFound", err)
		}
		return tx.PutReport(ctx, third)
	})
	wantReport(t, "report put after a not-found read", getReport(t, rs, 3, third.ReportID), third)
}

func testFailedUpdateReports(t *testing.T, s Store) {
	ctx := context.Background()
	rs := reportStore(t, s)
	a, b := report(1, 10, 1, "2024-03-05"), report(1, 10, 2, "2024-03-05")
	a.InterpretationDetail = []byte(awkwardJSON)
	u := fullUser(1, 10, "c-10")
	pos := events.Position{Commit: 70, Prepare: 70}
	update(t, s, "users", pos, func(tx projections.UserTx) error { return tx.PutUser(ctx, u) })
	if err := s.UpdateReports(ctx, "reports", pos, func(rt projections.ReportTx) error {
		if err := rt.PutReport(ctx, a); err != nil {
			return err
		}
		return rt.PutReport(ctx, b)
	}); err != nil {
		t.Fatal(err)
	}

	boom := errors.New("projector failed")
	err := s.UpdateReports(ctx, "reports", events.Position{Commit: 80, Prepare: 80}, func(rt projections.ReportTx) error {
		a2 := a
		a2.AppID, a2.Day, a2.RawData, a2.ExaminedAt, a2.IsViewed = 2, "2024-03-06", nil, nil, !a.IsViewed
		if err := rt.PutReport(ctx, a2); err != nil {
			return err
		}
		if err := rt.PutReport(ctx, report(1, 10, 3, "2024-03-05")); err != nil {
			return err
		}
		got, err := rt.Report(ctx, a.ReportID)
		if err != nil {
			return err
		}
		wantReport(t, "Tx.Report inside the failing Update", got, a2)
		return fmt.Errorf("apply event: %w", boom)
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update error = %v, want one wrapping the fn's error", err)
	}
	wantCheckpoint(t, s, "reports", pos)
	wantReport(t, "report after failed Update", getReport(t, rs, 1, a.ReportID), a)
	wantReportIDs(t, "ReportsOfDay after failed Update", reportsOfDay(t, rs, 1, 10, "2024-03-05"), []int64{1, 2})
	wantReportIDs(t, "the failed Update's day", reportsOfDay(t, rs, 2, 10, "2024-03-06"), nil)
	_, err = rs.Report(ctx, 1, 3)
	wantNotFound(t, "report put by the failed Update", err)
	if got, err := s.UserByPhone(ctx, 1, *u.Phone); err != nil || got.OpenUserID != u.OpenUserID {
		t.Errorf("UserByPhone(old phone) after failed Update = %d, %v", got.OpenUserID, err)
	}
	_, err = s.UserByPhone(ctx, 1, "+1 555 0100")
	wantNotFound(t, "UserByPhone(phone of the failed Update)", err)

	// The store is still usable.
	putReports(t, s, report(1, 10, 3, "2024-03-05"))
	wantReportIDs(t, "ReportsOfDay after a later Update", reportsOfDay(t, rs, 1, 10, "2024-03-05"), []int64{1, 2, 3})
}

func testReportTenancy(t *testing.T, s Store) {
	ctx := context.Background()
	rs := reportStore(t, s)
	// The same open user id in two apps cannot happen, but the store must
	// not rely on it: every read is scoped by app.
	r1, r2 := report(1, 10, 1, "2024-03-05"), report(2, 10, 2, "2024-03-05")
	putReports(t, s, r1, r2)
	wantReport(t, "Report(1, 1)", getReport(t, rs, 1, 1), r1)
	wantReport(t, "Report(2, 2)", getReport(t, rs, 2, 2), r2)
	for _, c := range []struct{ app, id int64 }{{2, 1}, {1, 2}, {3, 1}, {0, 1}, {1, 999}} {
		r, err := rs.Report(ctx, c.app, c.id)
		wantNotFound(t, fmt.Sprintf("Report(%d, %d)", c.app, c.id), err)
		if err != nil && r.ReportID != 0 {
			t.Errorf("Report(%d, %d) returned data with its error: %+v", c.app, c.id, r)
		}
	}
	wantReportIDs(t, "ReportsOfDay(app 1)", reportsOfDay(t, rs, 1, 10, "2024-03-05"), []int64{1})
	wantReportIDs(t, "ReportsOfDay(app 2)", reportsOfDay(t, rs, 2, 10, "2024-03-05"), []int64{2})
	wantReportIDs(t, "ReportsOfDay(app 3)", reportsOfDay(t, rs, 3, 10, "2024-03-05"), nil)
}

func testReportsOfDay(t *testing.T, s Store) {
	rs := reportStore(t, s)
	const app, user = int64(1), int64(10)
	var all []projections.Report
	// Written in an order unlike their ids', in two transactions.
	for _, id := range []int64{40, -3, 7, 1 << 40, 0, 12, 5, 31, 8} {
		all = append(all, report(app, user, id, "2024-03-05"))
	}
	all = append(all,
		report(app, user, 6, "2024-03-04"),
		report(app, user, 9, "2024-03-06"),
		report(app, user, 11, "2024-3-5"), // another spelling is another day
		report(app, user, 13, ""),
		report(app, 11, 2, "2024-03-05"),     // another user
		report(app+1, user, 3, "2024-03-05"), // another app
	)
	putReports(t, s, all[:7]...)
	putReports(t, s, all[7:]...)

	for _, c := range []struct {
		app, user int64
		day       string
		want      []int64
	}{
		{app, user, "2024-03-05", []int64{-3, 0, 5, 7, 8, 12, 31, 40, 1 << 40}},
		{app, user, "2024-03-04", []int64{6}},
		{app, user, "2024-03-06", []int64{9}},
		{app, user, "2024-3-5", []int64{11}},
		{app, user, "", []int64{13}},
		{app, user, "2024-03-07", nil},
		{app, user, "2024-03", nil}, // exact, not a prefix
		{app, 11, "2024-03-05", []int64{2}},
		{app, 12, "2024-03-05", nil},
		{app + 1, user, "2024-03-05", []int64{3}},
	} {
		got := reportsOfDay(t, rs, c.app, c.user, c.day)
		wantReportIDs(t, fmt.Sprintf("ReportsOfDay(%d, %d, %q)", c.app, c.user, c.day), got, c.want)
		for _, r := range got {
			if r.AppID != c.app || r.OpenUserID != c.user || r.Day != c.day {
				t.Errorf("ReportsOfDay(%d, %d, %q) returned %d of app %d, user %d, day %q",
					c.app, c.user, c.day, r.ReportID, r.AppID, r.OpenUserID, r.Day)
			}
		}
	}
	l := reportsOfDay(t, rs, app, user, "2024-03-05")
	for _, want := range all {
		for _, got := range l {
			if got.ReportID == want.ReportID {
				wantReport(t, fmt.Sprintf("ReportsOfDay row %d", got.ReportID), got, want)
			}
		}
	}
}

func testUserByPhone(t *testing.T, s Store) {
	ctx := context.Background()
	withPhone := func(app, open int64, phone *string) projections.User {
		u := fullUser(app, open, fmt.Sprintf("c-%d", open))
		u.Phone = phone
		return u
	}
	const phone = "13800138000"
	// Written highest id first, so the lowest id is not the first written.
	users := []projections.User{
		withPhone(1, 30, ptr(phone)),
		withPhone(1, 20, ptr(phone)),
		withPhone(1, 25, ptr(phone)),
		withPhone(2, 5, ptr(phone)), // another app, lower id
		withPhone(1, 40, ptr("+86 "+phone)),
		withPhone(1, 41, ptr("13900139000")),
		withPhone(1, 42, nil),
	}
	put(t, s, users, nil, nil)

	byPhone := func(app int64, p string) (int64, error) {
		u, err := s.UserByPhone(ctx, app, p)
		return u.OpenUserID, err
	}
	wantUserID := func(what string, app int64, p string, want int64) {
		t.Helper()
		got, err := byPhone(app, p)
		if err != nil || got != want {
			t.Errorf("%s: UserByPhone(%d, %q) = %d, %v; want %d", what, app, p, got, err, want)
		}
	}
	wantNoUser := func(what string, app int64, p string) {
		t.Helper()
		got, err := byPhone(app, p)
		wantNotFound(t, fmt.Sprintf("%s: UserByPhone(%d, %q) = %d", what, app, p, got), err)
	}

	wantUserID("several users: the lowest id", 1, phone, 20)
	wantUserID("other app", 2, phone, 5)
	wantUserID("one user", 1, "13900139000", 41)
	wantUserID("another spelling is another phone", 1, "+86 "+phone, 40)
	wantNoUser("unknown app", 3, phone)
	wantNoUser("missing", 1, "13700137000")
	wantNoUser("exact match only", 1, phone[:10])
	wantNoUser("exact match only", 1, phone+" ")
	got, err := s.UserByPhone(ctx, 1, phone)
	if err != nil {
		t.Fatal(err)
	}
	wantUser(t, "UserByPhone's user", got, users[1])
	*got.Phone = "mutated" // results are copies
	wantUserID("after a caller mutated a result", 1, phone, 20)

	// The lowest changes its phone: the old phone finds the next, the new
	// phone finds it; dropping a phone takes the user out of the lookup.
	changed := withPhone(1, 20, ptr("13700137000"))
	put(t, s, []projections.User{changed, withPhone(1, 25, nil)}, nil, nil)
	wantUserID("old phone after PutUser changed it", 1, phone, 30)
	wantUserID("new phone after PutUser", 1, "13700137000", 20)
	put(t, s, []projections.User{withPhone(1, 30, nil)}, nil, nil)
	wantNoUser("every holder changed its phone", 1, phone)
	wantUserID("other app unaffected", 2, phone, 5)

	// A user moving to another app takes its phone along.
	put(t, s, []projections.User{withPhone(3, 20, ptr("13700137000"))}, nil, nil)
	wantNoUser("phone of a user that moved app", 1, "13700137000")
	wantUserID("phone in the user's new app", 3, "13700137000", 20)
}

func testResetReports(t *testing.T, s Store) {
	ctx := context.Background()
	rs := reportStore(t, s)
	ns := nonceStore(t, s)
	r := report(1, 10, 1, "2024-03-05")
	u := fullUser(1, 10, "c-10")
	put(t, s, []projections.User{u}, nil, nil)
	putReports(t, s, r)
	future := time.Now().Add(time.Hour)
	wantUse(t, ns, "before Reset", "sig", "n-1", future, true)

	if err := s.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	_, err := rs.Report(ctx, 1, r.ReportID)
	wantNotFound(t, "Report after Reset", err)
	wantReportIDs(t, "ReportsOfDay after Reset", reportsOfDay(t, rs, 1, 10, r.Day), nil)
	_, err = s.UserByPhone(ctx, 1, *u.Phone)
	wantNotFound(t, "UserByPhone after Reset", err)
	wantCheckpoint(t, s, "reports", events.Position{})
	// Nonces are not read models: a rebuild must not reopen a replay window.
	wantUse(t, ns, "after Reset", "sig", "n-1", future, false)
	wantUse(t, ns, "new nonce after Reset", "sig", "n-2", future, true)

	// Usable after Reset, and the old rows do not come back.
	putReports(t, s, report(1, 10, 2, r.Day))
	wantReportIDs(t, "ReportsOfDay after rebuild", reportsOfDay(t, rs, 1, 10, r.Day), []int64{2})
}

// ---- nonce cases ----

func testNonces(t *testing.T, s Store) {
	ns := nonceStore(t, s)
	now := time.Now()
	future, past := now.Add(time.Hour), now.Add(-time.Hour)

	wantUse(t, ns, "fresh", "sig", "abc", future, true)
	wantUse(t, ns, "replay", "sig", "abc", future, false)
	wantUse(t, ns, "replay with a later expiry", "sig", "abc", future.Add(time.Hour), false)
	wantUse(t, ns, "replay with an earlier expiry", "sig", "abc", past, false)
	// A refused use leaves the first use's expiry: still refused.
	wantUse(t, ns, "replay after a refused use", "sig", "abc", future, false)

	wantUse(t, ns, "same nonce, other scope", "webhook", "abc", future, true)
	wantUse(t, ns, "replay in the other scope", "webhook", "abc", future, false)
	wantUse(t, ns, "other nonce", "sig", "abd", future, true)
	wantUse(t, ns, "nonces are case-sensitive", "sig", "ABC", future, true)
	wantUse(t, ns, "empty nonce", "sig", "", future, true)
	wantUse(t, ns, "empty scope", "", "abc", future, true)
	wantUse(t, ns, "empty nonce replayed", "sig", "", future, false)
	// Scope and nonce are a pair, not a concatenation.
	wantUse(t, ns, "split elsewhere", "si", "gabc", future, true)
	long := strings.Repeat("n-🙂-", 100)
	wantUse(t, ns, "long unicode nonce", "sig", long, future, true)
	wantUse(t, ns, "long unicode nonce replayed", "sig", long, future, false)

	// A use that has expired no longer counts.
	wantUse(t, ns, "fresh, already expired", "sig", "old", past, true)
	wantUse(t, ns, "after the first use expired", "sig", "old", past, true)
	wantUse(t, ns, "after the expired use, valid again", "sig", "old", future, true)
	wantUse(t, ns, "replay of the renewed use", "sig", "old", future, false)
}

func testNonceRace(t *testing.T, s Store) {
	ctx := context.Background()
	ns := nonceStore(t, s)
	const goroutines = 20
	race := func(what, nonce string, expires time.Time) {
		t.Helper()
		var wg sync.WaitGroup
		var mu sync.Mutex
		fresh := 0
		var errs []error
		start := make(chan struct{})
		for range goroutines {
			wg.Go(func() {
				<-start
				ok, err := ns.Use(ctx, "sig", nonce, expires)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				}
				if ok {
					fresh++
				}
			})
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			t.Errorf("%s: Use: %v", what, err)
		}
		if fresh != 1 {
			t.Errorf("%s: %d of %d concurrent uses of one nonce were fresh, want exactly 1", what, fresh, goroutines)
		}
	}
	future := time.Now().Add(time.Hour)
	race("new nonce", "raced", future)
	// Taking over an expired use races the same way.
	wantUse(t, ns, "expired use", "sig", "renewed", time.Now().Add(-time.Hour), true)
	race("expired nonce", "renewed", future)
	wantUse(t, ns, "after the races", "sig", "raced", future, false)
}

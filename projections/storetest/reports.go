package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/nonces/noncetest"
	"github.com/healthtech/partner-open-platform/projections"
)

// reportCases are the cases of the reports sub-suite.
var reportCases = []testCase{
	{"ReportRoundTrip", testReportRoundTrip},
	{"PutReportReplacesAllFields", testPutReportReplaces},
	{"ReportTxReadsSeeOwnWrites", testReportTxReads},
	{"FailedUpdateChangesNoReports", testFailedUpdateReports},
	{"ReportTenancy", testReportTenancy},
	{"ReportsOfDayFilterAndOrder", testReportsOfDay},
	{"EraseUserReports", testEraseUserReports},
	{"ResetEmptiesReportsKeepsNonces", testResetReports},
}

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

func putReports(t *testing.T, s Store, rows ...projections.Report) {
	t.Helper()
	putRows(t, reportsOf(s), projections.ReportTx.PutReport, rows...)
}

// ---- report cases ----

// roundTripReports are the round trip's reports: full sets every field
// to awkward values (extreme numbers, non-ASCII text, awkward JSON), bare
// leaves every pointer nil, zeroes sets zero values (not nil), and big
// carries large JSON documents.
func roundTripReports() (full, bare, zeroes, big projections.Report) {
	cst := time.FixedZone("CST", 8*3600)
	full = projections.Report{
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
	bare = projections.Report{
		ReportID:   -5,
		AppID:      1 << 40,
		OpenUserID: -7,
		UploadedAt: at(0),
		Day:        "2024-03-05",
		UpdatedAt:  at(0),
	}
	zeroes = projections.Report{ // zero values are set, not nil
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
	big = report(1<<40, -7, 7, "2024-03-06")
	big.RawData, big.InterpretationDetail = bigJSON(), bigJSON()
	return full, bare, zeroes, big
}

// testReportRoundTrip: given the round trip's reports written in one
// transaction by a caller that reuses its buffers once PutReport returns,
// every read answers them field for field, and the store keeps its own
// copies of what it read and wrote.
func testReportRoundTrip(t *testing.T, s Store) {
	full, bare, zeroes, big := roundTripReports()

	write(t, reportsOf(s), func(tx projections.ReportTx) error {
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

	t.Run("ReadsAnswerEveryField", func(t *testing.T) {
		for _, want := range []projections.Report{full, bare, zeroes, big} {
			wantRow(t, fmt.Sprintf("Report(%d)", want.ReportID), must(s.Report(ctx, want.AppID, want.ReportID))(t), want)
		}
		day := must(s.ReportsOfDay(ctx, 1<<40, -7, "2024-03-05"))(t)
		wantIDs(t, "ReportsOfDay", day, []int64{-5, 0, 1<<63 - 1})
		if len(day) == 3 {
			wantRow(t, "ReportsOfDay[bare]", day[0], bare)
			wantRow(t, "ReportsOfDay[zeroes]", day[1], zeroes)
			wantRow(t, "ReportsOfDay[full]", day[2], full)
		}
		if l := must(s.ReportsOfDay(ctx, 1<<40, -7, "2024-03-06"))(t); len(l) != 1 {
			t.Errorf("ReportsOfDay(big's day) = %v, want [7]", ids(l))
		} else {
			wantRow(t, "ReportsOfDay[big]", l[0], big)
		}
	})
	t.Run("TxReadIsACopy", func(t *testing.T) {
		// Inside a transaction too; what it reads is a copy.
		write(t, reportsOf(s), func(tx projections.ReportTx) error {
			got, err := tx.Report(ctx, full.ReportID)
			if err != nil {
				return err
			}
			wantRow(t, "Tx.Report", got, full)
			got.RawData[1] ^= 0xff
			*got.OpenMemberID, *got.ExaminedAt = 1, at(9)
			return nil
		})
	})
	t.Run("ReadResultsAreCopies", func(t *testing.T) {
		// The store owns its copies: changing what was read changes nothing.
		got := must(s.Report(ctx, full.AppID, full.ReportID))(t)
		got.RawData[2] ^= 0xff
		got.InterpretationDetail[2] ^= 0xff
		*got.RequestReportID, *got.InterpretedAt, *got.OperatorPlatformUserID = "mutated", at(1), 5
		for _, r := range must(s.ReportsOfDay(ctx, 1<<40, -7, "2024-03-05"))(t) {
			if len(r.RawData) > 0 {
				r.RawData[0] ^= 0xff
			}
			if r.DeviceSN != nil {
				*r.DeviceSN = "mutated"
			}
		}
		wantRow(t, "Report after callers mutated results", must(s.Report(ctx, full.AppID, full.ReportID))(t), full)
		wantRow(t, "Report(zeroes) after callers mutated results", must(s.Report(ctx, zeroes.AppID, zeroes.ReportID))(t), zeroes)
	})
}

func testPutReportReplaces(t *testing.T, s Store) {
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
	wantRow(t, "replaced report", must(s.Report(ctx, 2, repl.ReportID))(t), want)
	_, err := s.Report(ctx, 1, repl.ReportID)
	wantNotFound(t, "Report in the old app after replace", err)
	wantIDs(t, "old user's old day", must(s.ReportsOfDay(ctx, 1, 10, "2024-03-05"))(t), []int64{6})
	wantIDs(t, "new user's new day", must(s.ReportsOfDay(ctx, 2, 20, "2024-03-06"))(t), []int64{5})
	wantIDs(t, "new user's old day", must(s.ReportsOfDay(ctx, 2, 20, "2024-03-05"))(t), nil)

	// Only the day changes: the report moves between the user's days.
	moved := repl
	moved.Day = "2024-03-07"
	putReports(t, s, moved)
	wantIDs(t, "day left", must(s.ReportsOfDay(ctx, 2, 20, "2024-03-06"))(t), nil)
	wantIDs(t, "day joined", must(s.ReportsOfDay(ctx, 2, 20, "2024-03-07"))(t), []int64{5})

	// Setting the pointers again, then putting the same row twice.
	back := old
	back.Day = moved.Day
	putReports(t, s, back, back)
	wantRow(t, "report put twice", must(s.Report(ctx, 1, back.ReportID))(t), back)
	wantIDs(t, "after identical puts", must(s.ReportsOfDay(ctx, 1, 10, "2024-03-07"))(t), []int64{5})
	wantIDs(t, "moved-from user", must(s.ReportsOfDay(ctx, 2, 20, "2024-03-07"))(t), nil)
}

func testReportTxReads(t *testing.T, s Store) {
	r := report(1, 10, 1, "2024-03-05")
	write(t, reportsOf(s), func(tx projections.ReportTx) error {
		_, err := tx.Report(ctx, r.ReportID)
		wantNotFound(t, "Tx.Report before PutReport", err)
		if err := tx.PutReport(ctx, r); err != nil {
			return err
		}
		got, err := tx.Report(ctx, r.ReportID)
		if err != nil {
			return fmt.Errorf("Tx.Report after PutReport: %w", err)
		}
		wantRow(t, "Tx.Report after PutReport", got, r)

		// Read, change, write, read again: the projector's partial update.
		got.IsViewed, got.InterpretationResult, got.RawData = true, ptr("viewed"), nil
		if err := tx.PutReport(ctx, got); err != nil {
			return err
		}
		again, err := tx.Report(ctx, r.ReportID)
		if err != nil {
			return err
		}
		wantRow(t, "Tx.Report after second PutReport", again, got)
		r = got
		return nil
	})

	wantRow(t, "Report after commit", must(s.Report(ctx, 1, r.ReportID))(t), r)

	// Read models are separate transactions (each its own Update and
	// checkpoint): no case writes two read models at once.

	// A later transaction reads committed rows of any app; a not-found read
	// handled by fn does not spoil it.
	other := report(2, 20, 3, "2024-03-05")
	putReports(t, s, other)
	third := report(3, 30, 4, "2024-03-05")
	write(t, reportsOf(s), func(tx projections.ReportTx) error {
		got, err := tx.Report(ctx, other.ReportID)
		if err != nil {
			return err
		}
		wantRow(t, "Tx.Report of another app", got, other)
		if _, err := tx.Report(ctx, 424242); !errors.Is(err, projections.ErrNotFound) {
			return fmt.Errorf("Tx.Report(424242) = %v, want ErrNotFound", err)
		}
		return tx.PutReport(ctx, third)
	})

	wantRow(t, "report put after a not-found read", must(s.Report(ctx, 3, third.ReportID))(t), third)
}

func testFailedUpdateReports(t *testing.T, s Store) {
	a, b := report(1, 10, 1, "2024-03-05"), report(1, 10, 2, "2024-03-05")
	a.InterpretationDetail = []byte(awkwardJSON)
	u := fullUser(1, 10, "c-10")
	writeAt(t, usersOf(s), "users", nextPos(), func(tx projections.UserTx) error { return tx.PutUser(ctx, u) })
	failedUpdate(t, s, reportsOf(s), func(tx projections.ReportTx) error {
		return firstErr(tx.PutReport(ctx, a), tx.PutReport(ctx, b))
	}, func(tx projections.ReportTx) error {
		a2 := a
		a2.AppID, a2.Day, a2.RawData, a2.ExaminedAt, a2.IsViewed = 2, "2024-03-06", nil, nil, !a.IsViewed
		if err := firstErr(tx.PutReport(ctx, a2), tx.PutReport(ctx, report(1, 10, 3, "2024-03-05"))); err != nil {
			return err
		}
		wantRow(t, "Tx.Report inside the failing Update", must(tx.Report(ctx, a.ReportID))(t), a2)
		return nil
	}, func(when string) {
		wantRow(t, "report "+when, must(s.Report(ctx, 1, a.ReportID))(t), a)
		wantIDs(t, "ReportsOfDay "+when, must(s.ReportsOfDay(ctx, 1, 10, "2024-03-05"))(t), []int64{1, 2})
		wantIDs(t, "the failed Update's day "+when, must(s.ReportsOfDay(ctx, 2, 10, "2024-03-06"))(t), nil)
		_, err := s.Report(ctx, 1, 3)
		wantNotFound(t, "report put by the failed Update "+when, err)
		if got, err := s.UserByPhone(ctx, 1, *u.Phone); err != nil || got.OpenUserID != u.OpenUserID {
			t.Errorf("UserByPhone(old phone) %s = %d, %v", when, got.OpenUserID, err)
		}
		_, err = s.UserByPhone(ctx, 1, "+1 555 0100")
		wantNotFound(t, "UserByPhone(phone of the failed Update) "+when, err)
	})

	// The store is still usable.
	putReports(t, s, report(1, 10, 3, "2024-03-05"))
	wantIDs(t, "ReportsOfDay after a later Update", must(s.ReportsOfDay(ctx, 1, 10, "2024-03-05"))(t), []int64{1, 2, 3})
}

func testReportTenancy(t *testing.T, s Store) {
	// The same open user id in two apps cannot happen, but the store must
	// not rely on it: every read is scoped by app.
	r1, r2 := report(1, 10, 1, "2024-03-05"), report(2, 10, 2, "2024-03-05")
	putReports(t, s, r1, r2)
	wantRow(t, "Report(1, 1)", must(s.Report(ctx, 1, 1))(t), r1)
	wantRow(t, "Report(2, 2)", must(s.Report(ctx, 2, 2))(t), r2)
	for _, c := range []struct{ app, id int64 }{{2, 1}, {1, 2}, {3, 1}, {0, 1}, {1, 999}} {
		r, err := s.Report(ctx, c.app, c.id)
		wantNotFound(t, fmt.Sprintf("Report(%d, %d)", c.app, c.id), err)
		if err != nil && r.ReportID != 0 {
			t.Errorf("Report(%d, %d) returned data with its error: %+v", c.app, c.id, r)
		}
	}
	wantIDs(t, "ReportsOfDay(app 1)", must(s.ReportsOfDay(ctx, 1, 10, "2024-03-05"))(t), []int64{1})
	wantIDs(t, "ReportsOfDay(app 2)", must(s.ReportsOfDay(ctx, 2, 10, "2024-03-05"))(t), []int64{2})
	wantIDs(t, "ReportsOfDay(app 3)", must(s.ReportsOfDay(ctx, 3, 10, "2024-03-05"))(t), nil)
}

func testReportsOfDay(t *testing.T, s Store) {
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
		got := must(s.ReportsOfDay(ctx, c.app, c.user, c.day))(t)
		wantIDs(t, fmt.Sprintf("ReportsOfDay(%d, %d, %q)", c.app, c.user, c.day), got, c.want)
		for _, r := range got {
			if r.AppID != c.app || r.OpenUserID != c.user || r.Day != c.day {
				t.Errorf("ReportsOfDay(%d, %d, %q) returned %d of app %d, user %d, day %q",
					c.app, c.user, c.day, r.ReportID, r.AppID, r.OpenUserID, r.Day)
			}
		}
	}
	l := must(s.ReportsOfDay(ctx, app, user, "2024-03-05"))(t)
	for _, want := range all {
		for _, got := range l {
			if got.ReportID == want.ReportID {
				wantRow(t, fmt.Sprintf("ReportsOfDay row %d", got.ReportID), got, want)
			}
		}
	}
}

func testResetReports(t *testing.T, s Store) {
	r := report(1, 10, 1, "2024-03-05")
	u := fullUser(1, 10, "c-10")
	put(t, s, []projections.User{u}, nil, nil)
	putReports(t, s, r)
	future := time.Now().Add(time.Hour)
	noncetest.WantUse(t, s, "before Reset", "sig", "n-1", future, true)

	if err := s.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	_, err := s.Report(ctx, 1, r.ReportID)
	wantNotFound(t, "Report after Reset", err)
	wantIDs(t, "ReportsOfDay after Reset", must(s.ReportsOfDay(ctx, 1, 10, r.Day))(t), nil)
	_, err = s.UserByPhone(ctx, 1, *u.Phone)
	wantNotFound(t, "UserByPhone after Reset", err)
	wantCheckpoint(t, s, "reports", events.Position{})
	// Nonces are not read models: a rebuild must not reopen a replay window.
	noncetest.WantUse(t, s, "after Reset", "sig", "n-1", future, false)
	noncetest.WantUse(t, s, "new nonce after Reset", "sig", "n-2", future, true)

	// Usable after Reset, and the old rows do not come back.
	putReports(t, s, report(1, 10, 2, r.Day))
	wantIDs(t, "ReportsOfDay after rebuild", must(s.ReportsOfDay(ctx, 1, 10, r.Day))(t), []int64{2})
}

// testEraseUserReports: erasure blanks the personal fields of the user's
// reports and keeps everything else; other users' reports are untouched.
func testEraseUserReports(t *testing.T, s Store) {
	mk := func(user, id int64) projections.Report {
		r := report(1, user, id, "2024-03-05")
		r.FilePath, r.InterpretationResult, r.OperatorName = ptr("f"), ptr("r"), ptr("o")
		r.InterpretationDetail, r.RawData = []byte(`{"a":1}`), []byte(`{"b":2}`)
		return r
	}
	putReports(t, s, mk(10, 1), mk(10, 2), mk(11, 3))
	writeAt(t, reportsOf(s), "p", events.Position{Commit: 5, Prepare: 5}, func(tx projections.ReportTx) error {
		return tx.EraseUserReports(ctx, 10)
	})
	for _, id := range []int64{1, 2} {
		got := must(s.Report(ctx, 1, id))(t)
		want := mk(10, id)
		want.FilePath, want.InterpretationResult, want.OperatorName, want.InterpretationDetail, want.RawData = nil, nil, nil, nil, nil
		wantRow(t, "erased report", got, want)
	}
	wantRow(t, "another user's report", must(s.Report(ctx, 1, 3))(t), mk(11, 3))
}

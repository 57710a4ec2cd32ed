package memory

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// seedReport is report i as a seeded log makes it (platformbench seed: a
// blood pressure upload, its raw data three indicators).
func seedReport(i int) projections.Report {
	at := time.Date(2026, 11, 30, 1, 2, 3, 456789000, time.UTC)
	raw, _ := json.Marshal(map[string]any{"data_source": "station", "data_type": "indicators", "indicators": []any{
		map[string]any{"code": "SBP", "value": 110 + i%30, "unit": "mmHg"}, map[string]any{"code": "DBP", "value": 70 + i%15, "unit": "mmHg"},
		map[string]any{"code": "HR", "value": 60 + i%40, "unit": "bpm"}}})
	typ, req := "BLOOD_PRESSURE", "seed-"+strconv.Itoa(3*i)
	return projections.Report{ReportID: int64(5_000_000 + i), AppID: int64(1 + i%100), OpenUserID: int64(1_000_000 + 9*i),
		RequestReportID: &req, ReportType: &typ, RawData: raw, UploadedAt: at, Day: "2026-11-30", UpdatedAt: at}
}

// benchReports puts n seeded reports into s, a thousand a transaction.
func benchReports(tb testing.TB, s *Store, n int) {
	ctx := context.Background()
	for i := 0; i < n; i += 1000 {
		if err := s.UpdateReports(ctx, "reports", events.Position{Commit: uint64(i + 1), Prepare: uint64(i + 1)}, func(tx projections.ReportTx) error {
			for j := i; j < min(i+1000, n); j++ {
				if err := tx.PutReport(ctx, seedReport(j)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkReportsLiveHeap reports the live heap the reports read model
// holds per report (B/report: the row, its texts and raw data, the index
// by id and the daily report's), for reports like a seeded log's.
//
//	go test -run '^$' -bench ReportsLiveHeap ./projections/memory
func BenchmarkReportsLiveHeap(b *testing.B) {
	const n = 20_000
	liveHeapPer(b, n, "B/report", func(s *Store) { benchReports(b, s, n) })
}

// BenchmarkReportReads reads one report by id and one user's day, as the
// report pull and the daily report do, and applies a report's upload.
//
//	go test -run '^$' -bench 'ReportReads|PutReport' -benchmem ./projections/memory
func BenchmarkReportReads(b *testing.B) {
	ctx := context.Background()
	s := New()
	benchReports(b, s, 1000)
	r := seedReport(10)
	b.Run("Report", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Report(ctx, r.AppID, r.ReportID); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ReportsOfDay", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if rs, err := s.ReportsOfDay(ctx, r.AppID, r.OpenUserID, r.Day); err != nil || len(rs) != 1 {
				b.Fatal(len(rs), err)
			}
		}
	})
}

// BenchmarkPutReport applies the uploads of a thousand reports in one
// transaction, into an empty read model each time.
func BenchmarkPutReport(b *testing.B) {
	rows := make([]projections.Report, 1000)
	for i := range rows {
		rows[i] = seedReport(i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		s := New()
		b.StartTimer()
		if err := s.UpdateReports(ctx, "reports", events.Position{Commit: 1, Prepare: 1}, func(tx projections.ReportTx) error {
			for _, r := range rows {
				if err := tx.PutReport(ctx, r); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}

package memory_test

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// fillBulk writes users (each with a group and a member) and as many
// deliveries (each with one attempt), a thousand rows per update, each
// update at a new event.
func (f *snapFixture) fillBulk(tb testing.TB, users int) {
	tb.Helper()
	ctx := f.ctx
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	phone, nick := "13800000000", "nick"
	t := tb
	pos := func() events.Position {
		res, err := f.log.Append(ctx, fmt.Sprintf("s-%d", time.Now().UnixNano()), events.NoStream(), events.Proposed{ID: fmt.Sprint(time.Now().UnixNano()), Type: "t", Data: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		return res.Position
	}
	for from := 1; from <= users; from += 1000 {
		if err := f.store.Update(ctx, "users", pos(), func(tx projections.UserTx) error {
			for i := from; i < from+1000 && i <= users; i++ {
				id := int64(i)
				if err := tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: id, ChannelUserID: fmt.Sprintf("channel-user-%d", i), Name: "a name", Nickname: &nick, Phone: &phone, Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at}); err != nil {
					return err
				}
				if err := tx.PutGroup(ctx, projections.Group{AppID: 1, OpenUserID: id, FamilyGroupID: id, AppGroupID: 1, Name: "g", CreatedAt: at, UpdatedAt: at}); err != nil {
					return err
				}
				if err := tx.PutMember(ctx, projections.Member{AppID: 1, OpenUserID: id, MemberID: id, AppUserID: "m", AppGroupID: 1, FamilyGroupID: id, Name: "m", Relationship: "SON", UpdatedAt: at}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := f.store.UpdateDeliveries(ctx, "deliveries", pos(), func(tx projections.DeliveryTx) error {
			for i := from; i < from+1000 && i <= users; i++ {
				if err := tx.PutDelivery(ctx, projections.Delivery{DeliveryID: fmt.Sprintf("delivery-%d", i), AppID: 1, EventType: "user.registered",
					SourceEventID: fmt.Sprintf("event-%d", i), SourcePosition: events.Position{Commit: uint64(i), Prepare: uint64(i)}, Cursor: events.Position{Commit: uint64(i), Prepare: uint64(i)},
					Body: []byte(`{"type":"user.registered","data":{"open_user_id":12345,"channel_user_id":"channel-user-1"}}`), Subject: fmt.Sprintf("user-%d", i), Status: "delivered", Attempts: 1, CreatedAt: at, UpdatedAt: at}); err != nil {
					return err
				}
				code := 200
				if err := tx.AddAttempt(ctx, projections.Attempt{DeliveryID: fmt.Sprintf("delivery-%d", i), Attempt: 1, At: at, StatusCode: &code, LatencyMS: 12, ResponseExcerpt: "ok"}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkSnapshotWrite is one snapshot write of 100,000 users (with a
// group and a member each) and 100,000 deliveries (with an attempt each):
// its CPU and the bytes it allocates, which the node's garbage collector
// pays for after it. all writes every read model, as a node does;
// deliveries writes the deliveries read model alone.
func BenchmarkSnapshotWrite(b *testing.B) {
	f := newSnapFixture(b)
	f.fillBulk(b, 100_000)
	// A write with nothing moved is skipped: each write first moves a
	// read model it holds.
	moveAudit := func(i int) error {
		return f.store.UpdateAudit(f.ctx, "audit", f.event(b), func(tx projections.AuditTx) error {
			return tx.AddAuditFact(f.ctx, projections.AuditFact{EventID: fmt.Sprint(i), At: time.Now()})
		})
	}
	moveDeliveries := func(int) error {
		return f.store.UpdateDeliveries(f.ctx, "deliveries", f.event(b), func(projections.DeliveryTx) error { return nil })
	}
	for _, c := range []struct {
		name   string
		models []projections.ReadModel
		move   func(i int) error
	}{
		{"all", projections.ReadModels, moveAudit},
		{"deliveries", []projections.ReadModel{projections.ReadModelDeliveries}, moveDeliveries},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := f.snapshotter()
			s.ReadModels = c.models
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, gc0 := processCPU(), collections()
			for i := 0; i < b.N; i++ {
				if err := c.move(i); err != nil {
					b.Fatal(err)
				}
				if err := s.Write(f.ctx); err != nil {
					b.Fatal(err)
				}
			}
			// The process's CPU, the collector's workers included: a
			// write's garbage is paid for by the collection that follows it.
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
			// The collections the writes brought on, and the collector's
			// CPU (its marking and pauses, as the runtime accounts them).
			gc := collections()
			b.ReportMetric(float64(gc.cycles-gc0.cycles)/float64(b.N), "gc-cycles/op")
			b.ReportMetric((gc.cpuSeconds-gc0.cpuSeconds)*1e6/float64(b.N), "gc-cpu-µs/op")
		})
	}
}

// gcTotals are the process's collections so far and the CPU the runtime
// accounts to them.
type gcTotals struct {
	cycles     uint64
	cpuSeconds float64
}

func collections() gcTotals {
	samples := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(samples)
	return gcTotals{cycles: samples[0].Value.Uint64(), cpuSeconds: samples[1].Value.Float64()}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

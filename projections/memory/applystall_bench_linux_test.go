package memory_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// BenchmarkApplyDuringSnapshotWrite is what a snapshot write does to a
// read model's projector: a store of 100,000 users (a group and a member
// each) and 100,000 deliveries (an attempt each) is written whole while
// another goroutine applies a one-row write every millisecond, as a
// projector following registers does: a new user (users) or a new
// delivery with its first attempt (deliveries). It reports the longest
// and the 99th-percentile wait of those applies during the write
// (apply-max-ms, apply-p99-ms): an apply waits for every hold of its read
// model's lock the write makes.
func BenchmarkApplyDuringSnapshotWrite(b *testing.B) {
	f := newSnapFixture(b)
	f.fillBulk(b, 100_000)
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	applies := []struct {
		model string
		apply func(id int64, pos events.Position) error
	}{
		{"users", func(id int64, pos events.Position) error {
			return f.store.Update(f.ctx, "users", pos, func(tx projections.UserTx) error {
				return tx.PutUser(f.ctx, projections.User{AppID: 1, OpenUserID: id, ChannelUserID: fmt.Sprintf("applied-%d", id), Name: "n", Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at})
			})
		}},
		{"deliveries", func(id int64, pos events.Position) error {
			return f.store.UpdateDeliveries(f.ctx, "deliveries", pos, func(tx projections.DeliveryTx) error {
				did := fmt.Sprintf("applied-%d", id)
				if err := tx.PutDelivery(f.ctx, projections.Delivery{DeliveryID: did, AppID: 1, EventType: "user.registered", SourceEventID: did,
					SourcePosition: pos, Cursor: pos, Body: []byte(`{}`), Subject: fmt.Sprintf("user-%d", id), Status: "delivered", Attempts: 1, CreatedAt: at, UpdatedAt: at}); err != nil {
					return err
				}
				return tx.AddAttempt(f.ctx, projections.Attempt{DeliveryID: did, Attempt: 1, At: at})
			})
		}},
	}
	next := int64(200_000)
	for _, a := range applies {
		b.Run(a.model, func(b *testing.B) {
			s := f.snapshotter()
			var lat []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				stop := make(chan struct{})
				var wg sync.WaitGroup
				var mu sync.Mutex
				wg.Add(1)
				go func() {
					defer wg.Done()
					tick := time.NewTicker(time.Millisecond)
					defer tick.Stop()
					for {
						select {
						case <-stop:
							return
						case <-tick.C:
						}
						next++
						pos := f.event(b)
						began := time.Now()
						if err := a.apply(next, pos); err != nil {
							b.Error(err)
							return
						}
						mu.Lock()
						lat = append(lat, time.Since(began))
						mu.Unlock()
					}
				}()
				time.Sleep(5 * time.Millisecond) // the applier is running when the write begins
				if err := s.Write(f.ctx); err != nil {
					b.Fatal(err)
				}
				close(stop)
				wg.Wait()
			}
			b.StopTimer()
			slices.Sort(lat)
			if len(lat) == 0 {
				b.Fatal("no apply ran during the writes")
			}
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "apply-max-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "apply-p99-ms")
			b.ReportMetric(float64(len(lat))/float64(b.N), "applies/op")
		})
	}
}

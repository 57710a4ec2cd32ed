package bolt_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/bolt"
)

// followers is how many subscriptions an embedded node runs (the read-model
// read models, the app directory, the dispatcher, the relay, the erasure
// follower).
const followers = 10

// cpuNow is the process's CPU time (user + system), for cpu-µs per
// operation: the wall time of these benchmarks is mostly fsync and waiting.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// drain reads sub until it has delivered the event at head.
func drain(b *testing.B, sub events.Subscription, head uint64) {
	for {
		rec, err := sub.Next(context.Background())
		if err != nil {
			b.Error(err)
			return
		}
		if rec.Position.Commit >= head {
			return
		}
	}
}

// BenchmarkFollowersCatchUp: ten subscriptions read a 20,000-event log from
// the start together, as a node's followers do after a restart; per event
// of the log (so ÷ 10 for one follower's share).
func BenchmarkFollowersCatchUp(b *testing.B) {
	ctx := context.Background()
	s, err := bolt.Open(filepath.Join(b.TempDir(), "events.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const size = 20_000
	for i := 0; i < size; i += 100 {
		evs := make([]events.Proposed, 100)
		for j := range evs {
			evs[j] = events.Proposed{ID: uuid.NewString(), Type: "user.registered", Data: []byte(fmt.Sprintf(`{"open_user_id":%d,"name":"n","phone":{"$enc":"k:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}}`, i+j)), Meta: []byte(`{"actor":"app-1","correlation_id":"c"}`)}
		}
		if _, err := s.Append(ctx, fmt.Sprintf("user-%d", i), events.NoStream(), evs...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuNow()
	for b.Loop() {
		var wg sync.WaitGroup
		for range followers {
			sub, err := s.SubscribeAll(ctx, events.Position{})
			if err != nil {
				b.Fatal(err)
			}
			wg.Add(1)
			go func() { defer wg.Done(); defer sub.Close(); drain(b, sub, size) }()
		}
		wg.Wait()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N*size), "µs/event")
	b.ReportMetric(float64((cpuNow()-cpu).Nanoseconds())/1e3/float64(b.N*size), "cpu-µs/event")
}

// BenchmarkFollowersLive: ten caught-up subscriptions follow one writer's
// commits of one event each; per commit, until every follower has it.
func BenchmarkFollowersLive(b *testing.B) {
	ctx := context.Background()
	s, err := bolt.Open(filepath.Join(b.TempDir(), "events.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	subs := make([]events.Subscription, followers)
	for i := range subs {
		if subs[i], err = s.SubscribeAll(ctx, events.Position{}); err != nil {
			b.Fatal(err)
		}
		defer subs[i].Close()
	}
	data := []byte(`{"open_user_id":1,"name":"n","phone":{"$enc":"k:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="},"at":"2026-01-02T03:04:05Z"}`)
	meta := []byte(`{"actor":"app-1","correlation_id":"c"}`)
	b.ReportAllocs()
	b.ResetTimer()
	var last uint64
	cpu := cpuNow()
	for i := 0; b.Loop(); i++ {
		res, err := s.Append(ctx, fmt.Sprintf("user-%d", i), events.NoStream(), events.Proposed{ID: uuid.NewString(), Type: "user.registered", Data: data, Meta: meta})
		if err != nil {
			b.Fatal(err)
		}
		last = res.Position.Commit
		var wg sync.WaitGroup
		for _, sub := range subs {
			wg.Add(1)
			go func() { defer wg.Done(); drain(b, sub, last) }()
		}
		wg.Wait()
	}
	b.ReportMetric(float64((cpuNow()-cpu).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
}

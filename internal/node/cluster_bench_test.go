package node_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// BenchmarkSnapshotReadFloor measures what cross-node read-your-writes
// costs a snapshot read on the Postgres event store and read models: with
// the head floor (each read reads the log's head and waits for the users
// family to reach it) against per-node watermarks only, on the same node in
// the same run. Report the ratio of the two reads/s.
//
//	PLATFORM_TEST_POSTGRES_URL=... go test -run '^$' -bench SnapshotReadFloor -benchtime 3s ./internal/node
func BenchmarkSnapshotReadFloor(b *testing.B) {
	db := pgtest.New(b)
	p := start(b, clusterConfig(b, db, "bench", 10*time.Second))
	p.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	a := p.createApp("bench")
	var reg registerData
	p.send(a.request("POST", "/open/v1/channel/users", registerBody("u-1"), time.Now())).data(b, &reg)
	path := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
	read := func(b *testing.B) {
		b.SetParallelism(4)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if res := p.send(a.request("GET", path, nil, time.Now())); res.Status != http.StatusOK {
					b.Fatalf("snapshot: %d %s", res.Status, res.Raw)
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
	}
	// Alternated rounds: the machine is shared, so compare neighbours.
	for round := 1; round <= 3; round++ {
		b.Run(fmt.Sprintf("head-floor/%d", round), read)
		b.Run(fmt.Sprintf("local-watermarks/%d", round), func(b *testing.B) {
			p.node.Watermarks.FollowHead(nil)
			defer p.node.Watermarks.FollowHead(p.node.Events.Head)
			read(b)
		})
	}
}

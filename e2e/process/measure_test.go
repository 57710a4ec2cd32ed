package process

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/e2e/internal/proc"
	"github.com/healthtech/partner-open-platform/events"
	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
	"github.com/healthtech/partner-open-platform/internal/kafkatest"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// envMeasure, set to 1, runs TestMeasureClusterThroughput; its seconds per
// step come from envMeasureSeconds (default 15).
const (
	envMeasure        = "PLATFORM_TEST_MEASURE"
	envMeasureSeconds = "PLATFORM_TEST_MEASURE_SECONDS"
)

// TestMeasureClusterThroughput measures how writes scale with nodes, opt-in and never
// asserted (numbers go to the log): registers/s and webhook deliveries/s
// with 1, 2 and 3 nodes on the Postgres event store (and the real broker
// when one is configured), then the Postgres event store's appends/s beside
// pgbench's TPC-B-like rate on the same server, all in one run so the
// ratios compare like with like.
//
//	PLATFORM_TEST_MEASURE=1 PLATFORM_TEST_POSTGRES_URL=... PLATFORM_TEST_FUZZTIME=0 \
//	  ./scripts/test.sh -run TestMeasureClusterThroughput -v ./e2e/process
func TestMeasureClusterThroughput(t *testing.T) {
	if os.Getenv(envMeasure) != "1" {
		t.Skip("measurement: set " + envMeasure + "=1 to run it")
	}
	seconds := proc.EnvInt(t, envMeasureSeconds, 15)
	step := time.Duration(seconds) * time.Second
	// With the real broker when there is one, and always without: the
	// dispatcher then follows the event store.
	buses := []bool{false}
	if os.Getenv(kafkatest.EnvBrokers) != "" {
		buses = append(buses, true)
	}
	for _, kafka := range buses {
		measureBus(t, step, kafka)
	}

	tps, err := pgbenchTPS(t, step)
	if err != nil {
		t.Logf("pgbench: %v (no TPC-B baseline)", err)
	}
	aps := appendRate(t, step)
	if tps > 0 {
		t.Logf("Postgres event store: %.0f appends/s (8 writers, one event each, exact expected revision); pgbench tpcb-like -c 8: %.0f TPS; ratio %.2f", aps, tps, aps/tps)
	} else {
		t.Logf("Postgres event store: %.0f appends/s (8 writers)", aps)
	}
}

// measureBus measures 1, 2 and 3 nodes with the given bus.
func measureBus(t *testing.T, step time.Duration, kafka bool) {
	type result struct {
		nodes                   int
		registers, webhooks     float64
		duringLoad, drainSecond float64
	}
	var results []result
	bus := "store"
	if kafka {
		bus = "kafka"
	}
	for nodes := 1; nodes <= 3; nodes++ {
		t.Run(fmt.Sprintf("%s %d nodes", bus, nodes), func(t *testing.T) {
			c := proc.Start(t, proc.Options{Nodes: nodes, RetrySchedule: "1s,1s,2s,3s,5s", Kafka: kafka})
			rcv := proc.NewHookReceiver(t, 0, 0, 0)
			p := c.CreatePartner("measure")
			rcv.SetSecret(p.WebhookSecret)
			c.Admin("PATCH", fmt.Sprintf("/admin/v1/apps/%d", p.AppID), map[string]any{"webhook_url": rcv.URL()}, http.StatusOK, nil)
			c.AwaitEverywhere(p.Creds, "/open/v1/webhooks/deliveries", 30*time.Second)

			var acked, failed atomic.Int64
			ctx, cancel := context.WithTimeout(context.Background(), step)
			defer cancel()
			start := time.Now()
			var wg sync.WaitGroup
			for worker := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ctx.Err() == nil; i++ {
						id := fmt.Sprintf("w%d-%d", worker, i)
						body := proc.MustJSON(map[string]any{"channel_user_id": id, "user": map[string]any{"name": "n"},
							"family_groups":  []any{map[string]any{"app_group_id": 1, "name": "home"}},
							"family_members": []any{map[string]any{"app_user_id": id, "app_group_id": 1, "name": "self", "relationship": "SELF"}}})
						r := c.Client.Send("register", c.Client.Next(), -1, proc.SignedM(p.Creds, "POST", "/open/v1/channel/users", body))
						if r.Status == http.StatusCreated {
							acked.Add(1)
						} else {
							failed.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			loadTook := time.Since(start)
			duringLoad := rcv.Delivered()
			// Every register makes two webhooks: its group and its member.
			want := int(2 * acked.Load())
			deadline := time.Now().Add(3 * time.Minute)
			for rcv.Delivered() < want && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
			_, _, first, last := rcv.Snapshot()
			got := rcv.Delivered()
			res := result{nodes: nodes, registers: float64(acked.Load()) / loadTook.Seconds(),
				webhooks: float64(got) / last.Sub(start).Seconds(), duringLoad: float64(duringLoad) / loadTook.Seconds(),
				drainSecond: last.Sub(start.Add(loadTook)).Seconds()}
			results = append(results, res)
			t.Logf("%s, %d node(s): %d registers in %v (%d failed): %.1f registers/s; %d of %d webhooks delivered, first %v after the start, "+
				"%.1f deliveries/s over the whole run (%.1f/s during the load), the last %.1fs after the load",
				bus, nodes, acked.Load(), loadTook.Round(time.Millisecond), failed.Load(), res.registers, got, want, first.Sub(start).Round(time.Millisecond),
				res.webhooks, res.duringLoad, res.drainSecond)
		})
	}
	if len(results) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "cluster throughput, %s as the dispatchers' feed (%v of registers per step, 16 client workers):\n", bus, step)
		for _, r := range results {
			fmt.Fprintf(&b, "  %d node(s): %7.1f registers/s (%.2fx one node), %7.1f webhook deliveries/s (%.2fx), %.1f/s during the load, last %.1fs after it\n",
				r.nodes, r.registers, r.registers/results[0].registers, r.webhooks, r.webhooks/results[0].webhooks, r.duringLoad, r.drainSecond)
		}
		t.Log(b.String())
	}
}

var tpsLine = regexp.MustCompile(`(?m)^tps = ([0-9.]+)`)

// pgbenchTPS runs pgbench's TPC-B-like load with 8 clients on a fresh
// database of the test server and returns its transactions per second.
func pgbenchTPS(t *testing.T, d time.Duration) (float64, error) {
	bin := os.Getenv("PGBENCH")
	if bin == "" {
		bin = "/usr/lib/postgresql/15/bin/pgbench"
	}
	if _, err := os.Stat(bin); err != nil {
		return 0, fmt.Errorf("%s: %w (set PGBENCH)", bin, err)
	}
	db := pgtest.New(t)
	if out, err := exec.Command(bin, "-q", "-i", "-s", "1", db).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("pgbench -i: %v: %s", err, out)
	}
	out, err := exec.Command(bin, "-b", "tpcb-like", "-c", "8", "-j", "2", "-T", strconv.Itoa(int(d.Seconds())), db).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("pgbench: %v: %s", err, out)
	}
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no tps line in pgbench output: %s", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// appendRate appends with 8 writers for d, each one event at a time to its
// own stream with an exact expected revision (what command handlers do),
// and returns appends per second.
func appendRate(t *testing.T, d time.Duration) float64 {
	ctx := context.Background()
	s, err := pgevents.Open(ctx, pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	start := time.Now()
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := fmt.Sprintf("measure-%d", w)
			for v := uint64(0); time.Now().Before(stop); v++ {
				if _, err := s.Append(ctx, stream, events.AfterVersion(v), events.Proposed{ID: uuid.NewString(), Type: "measure", Data: []byte(`{}`)}); err != nil {
					t.Error(err)
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(n.Load()) / time.Since(start).Seconds()
}

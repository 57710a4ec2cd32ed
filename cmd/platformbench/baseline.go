package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/bolt"
	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
)

// rawPayload is the size of a registration's event data (user fields
// encrypted per person, a family group): what one write appends.
const rawPayload = 700

// RawAppend is the write baseline: the same event store the platform uses
// (a bbolt log in a directory beside the platform's, with the same group
// commit and fsync; or the Postgres event store on the same server),
// appended directly through the events package, one new stream per append
// (as a registration does), from the same number of clients.
func RawAppend(ctx context.Context, storeURL, dir string, p Phase) (Measured, error) {
	var store events.Store
	if storeURL != "" {
		s, err := pgevents.Open(ctx, storeURL)
		if err != nil {
			return Measured{}, fmt.Errorf("raw append baseline: %w", err)
		}
		defer s.Close()
		store = s
	} else {
		d, err := os.MkdirTemp(dir, "rawappend-")
		if err != nil {
			return Measured{}, fmt.Errorf("raw append baseline: %w", err)
		}
		defer os.RemoveAll(d)
		s, err := bolt.Open(filepath.Join(d, "events.db"))
		if err != nil {
			return Measured{}, fmt.Errorf("raw append baseline: %w", err)
		}
		defer s.Close()
		store = s
	}
	pad := make([]byte, rawPayload/2)
	_, _ = rand.Read(pad)
	data, _ := json.Marshal(map[string]string{"sealed": hex.EncodeToString(pad)})
	meta := json.RawMessage(`{"app_id":1,"occurred_at":"2026-01-01T00:00:00Z"}`)
	run := hex.EncodeToString(pad[:6])
	return closedLoop(ctx, p, func(ctx context.Context, w, i int) error {
		id := newUUID()
		_, err := store.Append(ctx, fmt.Sprintf("rawbench-%s-%d-%d", run, w, i), events.NoStream(),
			events.Proposed{ID: id, Type: "bench.appended", Data: data, Meta: meta})
		return err
	}), nil
}

// newUUID returns a random version 4 UUID (event ids are UUIDs).
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

var tpsLine = regexp.MustCompile(`(?m)^tps = ([0-9.]+)`)

// PgbenchS is the Postgres read baseline: pgbench -S (one primary-key
// SELECT per transaction) against the same server with the same client
// count for the measured window, with a per-transaction log from which
// p50 and p99 are taken. The database must have been initialised
// (pgbench -i).
func PgbenchS(ctx context.Context, pgbench, url string, p Phase) (Measured, error) {
	return runPgbench(ctx, pgbench, url, p, "pgbench -S", "-S")
}

// runPgbench runs pgbench with args (its script) as PgbenchS runs -S:
// the phase's clients and window, a per-transaction log for p50 and p99,
// the machine's CPU meanwhile. what names it in errors.
func runPgbench(ctx context.Context, pgbench, url string, p Phase, what string, args ...string) (Measured, error) {
	dir, err := os.MkdirTemp("", "pgbench-log-")
	if err != nil {
		return Measured{}, fmt.Errorf("%s: %w", what, err)
	}
	defer os.RemoveAll(dir)
	secs := max(1, int(p.Window.Round(time.Second)/time.Second))
	args = append(args, "-n", "-c", strconv.Itoa(p.Clients), "-j", "2",
		"-T", strconv.Itoa(secs), "-l", "--log-prefix", filepath.Join(dir, "tx"), url)
	cmd := exec.CommandContext(ctx, pgbench, args...)
	cmd.Dir = dir
	var from cpuSample
	if p.CPU != nil {
		from = p.CPU()
	}
	out, err := cmd.CombinedOutput()
	var cpu CPUUse
	if p.CPU != nil {
		cpu = p.CPU().since(from) // pgbench and Postgres: the machine's busy time
	}
	if err != nil {
		return Measured{}, fmt.Errorf("%s: %w: %s", what, err, out)
	}
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		return Measured{}, fmt.Errorf("%s: no tps line in: %s", what, out)
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	lat, n, err := readPgbenchLogs(dir)
	if err != nil {
		return Measured{}, err
	}
	// Rate comes from pgbench's own tps; OK is scaled so Rate() agrees.
	_ = n
	return Measured{OK: int64(tps * float64(secs)), Elapsed: time.Duration(secs) * time.Second, Lat: lat, CPU: cpu}, nil
}

// readPgbenchLogs reads pgbench's per-transaction logs ("client_id
// transaction_no time_us script_no time_epoch time_us"): the third field is
// the transaction's latency in microseconds.
func readPgbenchLogs(dir string) (*Latencies, int, error) {
	files, err := filepath.Glob(filepath.Join(dir, "tx*"))
	if err != nil || len(files) == 0 {
		return nil, 0, fmt.Errorf("pgbench: no transaction log in %s", dir)
	}
	lat := &Latencies{}
	n := 0
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, 0, fmt.Errorf("pgbench log: %w", err)
		}
		var ds []time.Duration
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 3 {
				continue
			}
			us, err := strconv.ParseInt(fields[2], 10, 64)
			if err != nil {
				continue
			}
			ds = append(ds, time.Duration(us)*time.Microsecond)
		}
		fh.Close()
		lat.Add(ds)
		n += len(ds)
	}
	return lat, n, nil
}

package bolt_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
)

// envBigLog names an existing bolt event log (e.g. a measuring directory's
// events.db, 1.3 M events) that BenchmarkAppendBigLog copies and appends
// to: what a commit costs depends on the file's size and its freelist,
// which a fresh file in TempDir does not show. Unset: skipped.
const envBigLog = "PLATFORM_BENCH_BOLT_FILE"

// BenchmarkAppendBigLog appends single events to distinct streams from 32
// parallel writers (as registers make them) at the end of a copy of a big
// log, and reports the process's CPU per append besides the rate.
func BenchmarkAppendBigLog(b *testing.B) {
	src := os.Getenv(envBigLog)
	if src == "" {
		b.Skip(envBigLog + " is unset: no big log to append to")
	}
	path := filepath.Join(b.TempDir(), "events.db")
	copyFile(b, src, path)
	s := openT(b, path)
	ctx := context.Background()
	payload := []byte(`{"app_id":1001,"open_user_id":123456789,"name":"Zoë","phone":"+8613800000000","gender":"female"}`)
	var n atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	cpu0 := cpuTime(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ev := events.Proposed{ID: uuid.NewString(), Type: "bench.appended", Data: payload}
			if _, err := s.Append(ctx, fmt.Sprintf("bench-%d", n.Add(1)), events.NoStream(), ev); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func copyFile(b *testing.B, from, to string) {
	in, err := os.Open(from)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
}

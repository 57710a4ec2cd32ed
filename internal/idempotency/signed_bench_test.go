package idempotency_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/datakeys"
	keyfiles "github.com/healthtech/partner-open-platform/internal/datakeys/files"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/idempotency"
	"github.com/healthtech/partner-open-platform/internal/nonces/filelog"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

// BenchmarkSignedWrite is the record of a signed write on an embedded
// node's binding store (the nonce file): its claim, its answer sealed and
// recorded, around a handler that only answers. Compare it with the same
// benchmark at another commit, in the same run.
//
//	go test -run '^$' -bench SignedWrite -benchtime 20000x -count 5 ./internal/idempotency
func BenchmarkSignedWrite(b *testing.B) { benchmarkSignedWrite(b, false) }

// BenchmarkSignedWriteAboutAUser is BenchmarkSignedWrite with an answer
// about a user (a register's), sealed with the user's data key.
func BenchmarkSignedWriteAboutAUser(b *testing.B) { benchmarkSignedWrite(b, true) }

func benchmarkSignedWrite(b *testing.B, aboutAUser bool) {
	store, err := filelog.Open(filepath.Join(b.TempDir(), "nonces.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	sealer, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		b.Fatal(err)
	}
	k := &idempotency.Keeper{Sealer: sealer}
	user := 0
	if aboutAUser {
		keys, err := keyfiles.Open(filepath.Join(b.TempDir(), "keys"))
		if err != nil {
			b.Fatal(err)
		}
		k.Keys, user = datakeys.New(keys, sealer), 42
	}
	const body = `{"channel_user_id":"bench","user":{"name":"n","phone":"13812345678"}}`
	h := func(w http.ResponseWriter, r *http.Request, begin func() error) {
		if begin() != nil {
			return
		}
		httpapi.OK(w, http.StatusCreated, map[string]any{"open_user_id": user, "channel_user_id": "bench"})
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime(b)
	defer func() { b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/float64(b.N), "cpu-µs/op") }()
	for i := range b.N {
		r := httptest.NewRequest(http.MethodPost, "/open/v1/channel/users", strings.NewReader(body))
		w := httptest.NewRecorder()
		k.ServeSigned(w, r, 7, []byte(body), store, idempotency.SignedKey(strconv.Itoa(i), r, []byte(body)), nil, h)
		if w.Code != http.StatusCreated {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
}

// cpuTime is the process's user+system CPU time: on a shared machine, CPU
// per operation holds where wall time per operation does not.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

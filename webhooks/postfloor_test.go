package webhooks

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/webhooks/targets"
)

// The floor of a delivery's POST: what the platform's process spends on
// one signed POST through the delivery client, with the receiver in
// another process (as a partner's is), so the CPU counted is the
// sender's alone. The fan-out goal is bounded below by this: each
// endpoint's delivery is its own POST, signed under its own secret.

// floorReceiverEnv makes the test binary a receiver process: it serves
// as cmd/platformbench's receiver does (reads the body, checks the
// signature, decodes the JSON, answers 200 with no body), prints its URL
// and serves until its standard input closes.
const floorReceiverEnv = "WEBHOOKS_FLOOR_RECEIVER_SECRET"

func TestMain(m *testing.M) {
	if secret := os.Getenv(floorReceiverEnv); secret != "" {
		serveFloorReceiver(secret)
		return
	}
	os.Exit(m.Run())
}

func serveFloorReceiver(secret string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var bad atomic.Int64
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		want := Sign(secret, r.Header.Get("X-Webhook-Timestamp"), body)
		if !hmac.Equal([]byte(want), []byte(r.Header.Get("X-Webhook-Signature"))) {
			bad.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var d struct {
			Event      string `json:"event"`
			DeliveryID string `json:"delivery_id"`
		}
		if json.Unmarshal(body, &d) != nil || d.DeliveryID != r.Header.Get("X-Webhook-Id") {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	})}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("http://%s/hook\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
}

// startFloorReceiver runs a receiver process for b and returns its URL.
func startFloorReceiver(b *testing.B, secret string) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), floorReceiverEnv+"="+secret)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("receiver process: %v", err)
	}
	return strings.TrimSpace(line)
}

// processCPU is this process's user and system CPU so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// floorBody is a user.profile.updated body of the size the benchmark's
// deliveries carry, with its delivery id.
func floorBody(id string) []byte {
	return []byte(`{"event":"user.profile.updated","delivery_id":"` + id + `","app_id":1,"open_user_id":12345,` +
		`"channel_user_id":"bench-user-12345","occurred_at":"2026-01-02T03:04:05Z","data":{"changed_fields":["display_name","locale"]}}`)
}

// floorConcurrency is the sender's default POSTs in flight to one endpoint.
const floorConcurrency = DefaultPerEndpoint

// runConcurrently calls post(i) for i in [0, n) from floorConcurrency
// goroutines and reports the process's CPU per call as cpu-µs/op.
func runConcurrently(b *testing.B, n int, post func(i int) error) {
	b.Helper()
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu := processCPU(b)
	for range floorConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := post(i); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	cpu = processCPU(b) - cpu
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/op")
}

// BenchmarkPostFloor is a bare signed POST per op to a receiver process:
// a kept HMAC and the spec's headers, the answer drained, nothing
// recorded. client goes through the delivery client (targets.Guard's
// transport, keep-alive, no redirects, its timeout), as the sender does;
// transport calls that client's Transport.RoundTrip with the timeout as
// the request's deadline (what Client.Do adds: a copy of the headers for
// redirects, a deadline context, the error wrapping); raw-http1 writes
// the request as HTTP/1.1 bytes on a kept TCP connection per goroutine
// and reads the answer with http.ReadResponse (the floor of a hand-made
// client: no TLS, no pool, no transport goroutines).
func BenchmarkPostFloor(b *testing.B) {
	const secret = "floor-secret"
	target := startFloorReceiver(b, secret)
	client := targets.Guard{AllowLoopback: true}.Client(10 * time.Second)
	var s signers
	sign := func(i int) (id string, body []byte, h http.Header) {
		id = "wh_floor_" + strconv.Itoa(i)
		body = floorBody(id)
		ts, sig := s.sign(secret, time.Now().Unix(), body)
		return id, body, attemptHeader(id, "user.profile.updated", ts, sig)
	}
	check := func(id string, res *http.Response) error {
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("POST %s: %s", id, res.Status)
		}
		return nil
	}
	b.Run("client", func(b *testing.B) {
		b.ReportAllocs()
		runConcurrently(b, b.N, func(i int) error {
			id, body, h := sign(i)
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, target, bytes.NewReader(body))
			if err != nil {
				return err
			}
			req.Header = h
			res, err := client.Do(req)
			if err != nil {
				return err
			}
			return check(id, res)
		})
	})
	b.Run("transport", func(b *testing.B) {
		b.ReportAllocs()
		runConcurrently(b, b.N, func(i int) error {
			id, body, h := sign(i)
			ctx, cancel := context.WithTimeout(context.Background(), client.Timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
			if err != nil {
				return err
			}
			req.Header = h
			res, err := client.Transport.RoundTrip(req)
			if err != nil {
				return err
			}
			return check(id, res)
		})
	})
	b.Run("raw-http1", func(b *testing.B) {
		u, err := url.Parse(target)
		if err != nil {
			b.Fatal(err)
		}
		type conn struct {
			c net.Conn
			r *bufio.Reader
			w *bufio.Writer
		}
		conns := make(chan *conn, floorConcurrency)
		for range floorConcurrency {
			c, err := net.Dial("tcp", u.Host)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			conns <- &conn{c: c, r: bufio.NewReader(c), w: bufio.NewWriter(c)}
		}
		b.ReportAllocs()
		runConcurrently(b, b.N, func(i int) error {
			id, body, h := sign(i)
			c := <-conns
			defer func() { conns <- c }()
			fmt.Fprintf(c.w, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", u.RequestURI(), u.Host, len(body))
			for k, v := range h {
				fmt.Fprintf(c.w, "%s: %s\r\n", k, v[0])
			}
			c.w.WriteString("\r\n")
			c.w.Write(body)
			if err := c.w.Flush(); err != nil {
				return err
			}
			res, err := http.ReadResponse(c.r, nil)
			if err != nil {
				return err
			}
			return check(id, res)
		})
	})
}

// BenchmarkSoleAttemptOutOfProcess is BenchmarkSoleAttempt against a
// receiver process through the delivery client: the sender's whole
// attempt (the POST, the outcome decided, encoded and appended to the
// in-memory log) without the log's commit or the projection. via=transport
// is the sender as it is; via=Do sends the same POSTs through
// http.Client.Do (a client with the same policies that the sender does
// not recognise), for comparison in one run.
func BenchmarkSoleAttemptOutOfProcess(b *testing.B) {
	const secret = "secret"
	url := startFloorReceiver(b, secret)
	for _, via := range []string{"transport", "Do"} {
		b.Run("via="+via, func(b *testing.B) {
			f := newKnownFixture(b, true)
			f.d.Apps = appDirectory{1: {AppID: 1, WebhookURL: url, WebhookSecret: secret}}
			f.d.Client = targets.Guard{AllowLoopback: true}.Client(10 * time.Second)
			if via == "Do" {
				f.d.Client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			}
			if f.d.direct(url) != (via == "transport") {
				b.Fatalf("via %s: direct = %v", via, f.d.direct(url))
			}
			ids := make([]string, b.N)
			for i := range ids {
				ids[i] = "d" + strconv.Itoa(i)
				f.create(b, ids[i])
			}
			b.ReportAllocs()
			key := endpointKey{app: 1}
			runConcurrently(b, b.N, func(i int) error {
				f.eps.acquire(key, url, time.Now())
				f.d.attempt(context.Background(), f.eps, claimed{Claim: Claim{DeliveryID: ids[i]}, ep: key, url: url}, time.Now(), func() {}, func() {})
				return nil
			})
			for _, id := range ids[:min(len(ids), 3)] {
				recs, err := f.store.Store.ReadStream(context.Background(), domain.DeliveryStream(id), 0, 0)
				if err != nil || len(recs) != 2 {
					b.Fatalf("%s: %d events, %v: the attempt was not recorded", id, len(recs), err)
				}
			}
		})
	}
}

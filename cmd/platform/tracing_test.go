package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestTracesFlushedAtStop runs the real main with tracing turned on by an
// OTLP endpoint alone and a batch delay far longer than the test: the
// request spans reach the OTLP receiver only because a stopping platform
// exports what it holds before it exits.
func TestTracesFlushedAtStop(t *testing.T) {
	var mu sync.Mutex
	var names []string
	services := map[string]bool{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg collectortrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &msg) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range msg.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.Key == "service.name" {
					services[kv.GetValue().GetStringValue()] = true
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names = append(names, s.Name)
				}
			}
		}
		mu.Unlock()
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	defer rcv.Close()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PLATFORM_TEST_RUN_MAIN=1", "PLATFORM_DATA_DIR="+t.TempDir(), "PLATFORM_ADDR="+addr,
		"OTEL_TRACES_EXPORTER=", "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.URL, "OTEL_SERVICE_NAME=pop-flush-test", "OTEL_BSP_SCHEDULE_DELAY=600000")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the platform did not answer /healthz; stderr:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	before := len(names)
	mu.Unlock()
	if before != 0 {
		t.Fatalf("spans exported before the stop (%v): the batch delay should have held them", names)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit: %v; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the platform did not stop; stderr:\n%s", stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, n := range names {
		found = found || n == "GET /healthz"
	}
	if !found || !services["pop-flush-test"] {
		t.Fatalf("after the stop the receiver holds spans %v of services %v, want GET /healthz of pop-flush-test; stderr:\n%s", names, services, stderr.String())
	}
	if !bytes.Contains(stderr.Bytes(), []byte("tracing on")) {
		t.Errorf("the start-up log does not say tracing is on:\n%s", stderr.String())
	}
}

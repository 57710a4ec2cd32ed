package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	partneropen "github.com/healthtech/partner-open-platform/sdk/go"
)

// A platform that refuses the feed's wait parameter (422 on it, as a
// node with a stricter version would) gets one refused long-poll: listen
// says so, drops wait and reads the feed every interval, and the event the
// feed then holds is forwarded.
func TestListenFallsBackToPollingWhenWaitIsRefused(t *testing.T) {
	var mu sync.Mutex
	var queries []string
	platform := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.RawQuery)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Has("wait") {
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = io.WriteString(w, `{"success":false,"code":"VALIDATION_ERROR","message":"invalid","errors":{"wait":["unknown"]}}`)
			return
		}
		_, _ = io.WriteString(w, `{"success":true,"code":0,"message":"ok","data":{"events":[{"cursor":"5-5","delivery_id":"d-1","event":"order.shipped","payload":{"event":"order.shipped"}}],"next_cursor":"5-5","has_more":false}}`)
	}))
	defer platform.Close()
	got := make(chan []byte, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case got <- b:
		default:
		}
	}))
	defer receiver.Close()

	client, err := partneropen.NewClient(partneropen.WithBaseURL(platform.URL), partneropen.WithCredentials("1", "k", "s"),
		partneropen.WithRetryPolicy(partneropen.RetryPolicy{}))
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	l := &listener{client: client, forwardTo: receiver.URL, secret: newSecret(), cursor: "4-4", cursorFile: t.TempDir() + "/c",
		interval: 100 * time.Millisecond, wait: 20 * time.Second, http: receiver.Client(), out: &out, errOut: &errOut}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.loop(ctx); close(done) }()
	select {
	case b := <-got:
		if string(b) != `{"event":"order.shipped"}` {
			t.Fatalf("forwarded %s", b)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("nothing forwarded")
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(queries) < 2 || !strings.Contains(queries[0], "wait=20") || strings.Contains(queries[1], "wait") {
		t.Fatalf("feed queries %q: want one with wait=20, then none with wait", queries)
	}
	if !strings.Contains(errOut.String(), "the platform does not hold feed reads (422 VALIDATION_ERROR)") {
		t.Fatalf("stderr %q", errOut.String())
	}
}

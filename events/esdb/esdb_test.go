package esdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
	api "github.com/EventStore/EventStore-Client-Go/v4/protos/streams"
	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/storetest"
)

// TestConformance runs the one event-store suite against a real server, e.g.
//
//	docker run -d -p 2113:2113 -e KURRENTDB_INSECURE=true kurrentplatform/kurrentdb:26.1.1
//	PLATFORM_TEST_ESDB_URL='esdb://127.0.0.1:2113?tls=false' go test ./events/esdb/
//
// (PLATFORM_ESDB_URL, the older name, is read too.)
func TestConformance(t *testing.T) {
	url := os.Getenv("PLATFORM_TEST_ESDB_URL")
	if url == "" {
		url = os.Getenv("PLATFORM_ESDB_URL")
	}
	if url == "" {
		t.Skip("EventStoreDB suite skipped: PLATFORM_TEST_ESDB_URL is not set")
	}
	storetest.Run(t, func(t *testing.T) events.Store {
		s, err := Open(url)
		if err != nil {
			t.Fatalf("open %s: %v", url, err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// quiet keeps the client's warnings out of the test output.
var quiet = WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))

// openFake opens a store on a fake server.
func openFake(t *testing.T, f *fakeServer) *Store {
	t.Helper()
	s, err := Open(f.start(t), quiet)
	if err != nil {
		t.Fatalf("open on the fake server: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// deadPort is a loopback port nothing listens on.
func deadPort(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()
	return addr
}

func event(typ string) events.Proposed {
	return events.Proposed{ID: uuid.NewString(), Type: typ, Data: []byte(`{}`)}
}

// bounded runs f and fails the test if it has not returned after limit: a
// guard against hangs, not a timing assertion.
func bounded[T any](t *testing.T, limit time.Duration, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(limit):
		t.Fatalf("no return within %s", limit)
		panic("unreachable")
	}
}

// An unreachable server fails Open with the network's own cause, not a
// bare deadline later on.
func TestOpenFailsWithTheCause(t *testing.T) {
	url := "esdb://" + deadPort(t) + "?tls=false"
	err := bounded(t, time.Minute, func() error {
		s, err := Open(url, quiet, WithProbeTimeout(20*time.Second))
		if err == nil {
			_ = s.Close()
		}
		return err
	})
	if err == nil {
		t.Fatal("Open succeeded without a server")
	}
	if !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "does not answer") {
		t.Fatalf("Open: %v, want the refused connection named", err)
	}
}

// A server that never answers the gRPC handshake (a plain TCP listener)
// makes Open give up at its probe timeout, naming what the client saw.
func TestOpenGivesUpOnASilentServer(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	defer func(d time.Duration) { closeWait = d }(closeWait)
	closeWait = 100 * time.Millisecond
	url := "esdb://" + lis.Addr().String() + "?tls=false&gossipTimeout=30"
	err = bounded(t, time.Minute, func() error {
		_, err := Open(url, quiet, WithProbeTimeout(time.Second))
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "no answer within 1s") {
		t.Fatalf("Open on a silent server: %v, want the probe timeout", err)
	}
}

func TestParseConnectionString(t *testing.T) {
	for _, c := range []struct {
		url      string
		ok       bool
		attempts int
	}{
		{"esdb://h:2113?tls=false", true, discoverAttempts},
		{"esdb://h:2113?tls=false&nodePreference=leader", true, discoverAttempts},
		{"esdb://h:2113?tls=false&MaxDiscoverAttempts=7", true, 7},
		{"esdb+discover://h1:2113,h2:2113?tls=false&maxdiscoverattempts=2", true, 2},
		{"esdb://h:2113?tls=false&nodePreference=follower", false, 0},
		{"esdb://h:2113?tls=false&nodePreference=random", false, 0},
		{"esdb://h:2113?tls=false&nodePreference=readonlyreplica", false, 0},
		{"esdb://h:2113?tls=false&maxDiscoverAttempts=0", false, 0},
		{"http://h:2113", false, 0},
	} {
		cfg, err := ParseConnectionString(c.url)
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v, want ok=%v", c.url, err, c.ok)
			continue
		}
		if err != nil {
			if strings.Contains(c.url, "nodePreference") && !strings.Contains(err.Error(), "leader") {
				t.Errorf("%s: %v does not say the leader is required", c.url, err)
			}
			continue
		}
		if cfg.MaxDiscoverAttempts != c.attempts {
			t.Errorf("%s: maxDiscoverAttempts %d, want %d", c.url, cfg.MaxDiscoverAttempts, c.attempts)
		}
	}
}

// The write result's position is the append's; nothing is read back, so a
// failing read (leader change, short deadline) cannot turn an accepted
// write into an error that makes the command write again.
func TestAppendTakesThePositionFromTheWrite(t *testing.T) {
	f := &fakeServer{
		append: func(int, *api.AppendReq_Options, []*api.AppendReq_ProposedMessage) (*api.AppendResp, error) {
			return success(4, 900, 900), nil
		},
	}
	s := openFake(t, f)
	f.setRead(func(int, *api.ReadReq, api.Streams_ReadServer) error {
		return status.Error(codes.Unavailable, "leader is moving")
	})
	res, err := s.Append(context.Background(), "orders-1", events.Exact(2), event("order.placed"), event("order.paid"))
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	if res != (events.AppendResult{Revision: 4, Position: events.Position{Commit: 900, Prepare: 900}}) {
		t.Fatalf("append result %+v", res)
	}
	if f.readCount() != 1 { // the probe at Open
		t.Fatalf("%d reads, want only Open's probe", f.readCount())
	}
}

// Without a position in the result the last event is read back; if that
// fails too, the write is still reported as done (with an unknown position).
func TestAppendWithoutPositionNeverFails(t *testing.T) {
	f := &fakeServer{
		append: func(int, *api.AppendReq_Options, []*api.AppendReq_ProposedMessage) (*api.AppendResp, error) {
			return success(4, 0, 0), nil
		},
	}
	s := openFake(t, f)
	ev := event("order.placed")
	f.setRead(func(_ int, req *api.ReadReq, srv api.Streams_ReadServer) error {
		return srv.Send(eventResp(ev.ID, "orders-1", ev.Type, req.GetOptions().GetStream().GetRevision(), 777))
	})
	res, err := s.Append(context.Background(), "orders-1", events.Exact(3), ev)
	if err != nil || res != (events.AppendResult{Revision: 4, Position: events.Position{Commit: 777, Prepare: 777}}) {
		t.Fatalf("append with read-back: %+v, %v", res, err)
	}

	f.setRead(func(int, *api.ReadReq, api.Streams_ReadServer) error {
		return status.Error(codes.Internal, "read failed")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err = s.Append(ctx, "orders-1", events.Exact(3), ev)
	if err != nil {
		t.Fatalf("an accepted write was reported as failed: %v", err)
	}
	if res.Revision != 4 || !res.Position.IsZero() {
		t.Fatalf("append result %+v, want revision 4 and an unknown position", res)
	}
}

func TestConflictCarriesTheActualCount(t *testing.T) {
	current := int64(4)
	f := &fakeServer{
		append: func(int, *api.AppendReq_Options, []*api.AppendReq_ProposedMessage) (*api.AppendResp, error) {
			return wrongVersionResp(current), nil
		},
	}
	s := openFake(t, f)
	for _, c := range []struct {
		current int64
		want    int64
	}{{4, 5}, {0, 1}, {-1, 0}} {
		current = c.current
		_, err := s.Append(context.Background(), "orders-1", events.NoStream(), event("order.placed"))
		var ce *events.ConflictError
		if !errors.As(err, &ce) || !events.IsConflict(err) {
			t.Fatalf("current %d: %v, want a ConflictError", c.current, err)
		}
		if ce.Actual != c.want || ce.Stream != "orders-1" || !ce.Expected.IsNoStream() {
			t.Fatalf("current %d: %+v, want Actual %d", c.current, ce, c.want)
		}
	}
}

func TestConflictActual(t *testing.T) {
	for msg, want := range map[string]int64{
		"wrong expected version: expecting '2' but got '5'":           6,
		"wrong expected version: expecting 'any' but got 'no_stream'": 0,
		"wrong expected version: expecting '0' but got '0'":           1,
		"wrong expected version":                                      -1,
		"expecting '1' but got 'garbage'":                             -1,
	} {
		if got := conflictActual(errors.New(msg)); got != want {
			t.Errorf("%q: %d, want %d", msg, got, want)
		}
	}
	if conflictActual(nil) != -1 {
		t.Error("nil error has an actual count")
	}
}

// Every call carries requires-leader on the wire (the client's own option
// puts it in the incoming context, where gRPC never sends it).
func TestEveryCallRequiresTheLeader(t *testing.T) {
	f := &fakeServer{
		append: func(int, *api.AppendReq_Options, []*api.AppendReq_ProposedMessage) (*api.AppendResp, error) {
			return success(0, 10, 10), nil
		},
	}
	s := openFake(t, f)
	ctx := context.Background()
	if _, err := s.Append(ctx, "s", events.NoStream(), event("t.happened")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadStream(ctx, "s", 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadAll(ctx, events.Position{}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Head(ctx); err != nil {
		t.Fatal(err)
	}
	got := f.leaderHeaders()
	if len(got) != 5 { // probe, append, three reads
		t.Fatalf("%d calls seen, want 5: %v", len(got), got)
	}
	for i, h := range got {
		if h != "[true]" {
			t.Fatalf("call %d carried requires-leader=%s, want true", i, h)
		}
	}
}

// A follower's not-leader refusal makes the client reconnect to the leader
// it names; the adapter retries the refused call once, so the caller never
// sees the election.
func TestNotLeaderIsRetriedOnTheLeader(t *testing.T) {
	f := &fakeServer{}
	ev := event("order.placed")
	f.read = func(call int, req *api.ReadReq, srv api.Streams_ReadServer) error {
		if call == 2 {
			return f.notLeader(srv)
		}
		return srv.Send(eventResp(ev.ID, "orders-1", ev.Type, 0, 50))
	}
	f.append = func(call int, _ *api.AppendReq_Options, _ []*api.AppendReq_ProposedMessage) (*api.AppendResp, error) {
		return success(1, 60, 60), nil
	}
	s := openFake(t, f)
	recs, err := s.ReadStream(context.Background(), "orders-1", 0, 0)
	if err != nil {
		t.Fatalf("read through an election: %v", err)
	}
	if len(recs) != 1 || recs[0].ID != ev.ID {
		t.Fatalf("read %+v", recs)
	}
	if n := f.readCount(); n != 3 {
		t.Fatalf("%d reads, want probe + refused + retried", n)
	}
}

// Once a call finds the server gone, later calls fail at once with the
// cause (no goroutine queues inside the client), and the store recovers by
// itself when the server is back.
func TestOutageFailsFastAndRecovers(t *testing.T) {
	defer func(a, b time.Duration) { probeMin, probeMax = a, b }(probeMin, probeMax)
	probeMin, probeMax = 20*time.Millisecond, 100*time.Millisecond
	f := &fakeServer{
		append: func(int, *api.AppendReq_Options, []*api.AppendReq_ProposedMessage) (*api.AppendResp, error) {
			return success(0, 10, 10), nil
		},
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	gs := grpc.NewServer()
	api.RegisterStreamsServer(gs, f)
	go func() { _ = gs.Serve(lis) }()
	s, err := Open("esdb://"+addr+"?tls=false&maxDiscoverAttempts=1&gossipTimeout=1", quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Append(ctx, "s", events.NoStream(), event("t.happened")); err != nil {
		t.Fatal(err)
	}

	gs.Stop()
	// The first call after the outage meets it (bounded: the gRPC
	// connection reports Unavailable once its socket is gone).
	var first error
	for i := 0; i < 50 && !errors.Is(first, ErrUnavailable); i++ {
		first = bounded(t, time.Minute, func() result { return call(s) }).err
	}
	if !errors.Is(first, ErrUnavailable) {
		t.Fatalf("append during the outage: %v, want ErrUnavailable", first)
	}

	before := runtime.NumGoroutine()
	const calls = 200
	for range calls {
		err := bounded(t, time.Minute, func() error {
			_, err := s.Append(ctx, "s", events.Exact(0), event("t.happened"))
			return err
		})
		var ue *UnavailableError
		if !errors.As(err, &ue) || ue.Cause == nil || ue.Since.IsZero() {
			t.Fatalf("append while down: %v, want an UnavailableError with its cause", err)
		}
	}
	if after := runtime.NumGoroutine(); after > before+20 {
		t.Fatalf("%d goroutines after %d failed calls, %d before: calls pile up", after, calls, before)
	}

	lis2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	gs2 := grpc.NewServer()
	api.RegisterStreamsServer(gs2, f)
	go func() { _ = gs2.Serve(lis2) }()
	defer gs2.Stop()
	var last error = errors.New("not tried")
	for i := 0; i < 500 && last != nil; i++ {
		_, last = s.Append(ctx, "s", events.Exact(0), event("t.happened"))
		if last != nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if last != nil {
		t.Fatalf("the store did not recover once the server was back: %v", last)
	}
}

type result struct {
	v   events.AppendResult
	err error
}

func call(s *Store) result {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := s.Append(ctx, "s", events.Exact(0), event("t.happened"))
	return result{r, err}
}

// Closing the store ends its subscriptions on both sides: Next returns
// ErrClosed and the server stops serving the stream.
func TestCloseEndsSubscriptions(t *testing.T) {
	f := &fakeServer{}
	f.read = func(call int, req *api.ReadReq, srv api.Streams_ReadServer) error {
		if req.GetOptions().GetSubscription() == nil {
			return nil
		}
		if err := srv.Send(confirmation()); err != nil {
			return err
		}
		<-srv.Context().Done()
		return nil
	}
	release := make(chan struct{})
	defer close(release)
	f.append = func(int, *api.AppendReq_Options, []*api.AppendReq_ProposedMessage) (*api.AppendResp, error) {
		<-release // a write the server never answers
		return success(0, 1, 1), nil
	}
	s := openFake(t, f)
	sub, err := s.SubscribeAll(context.Background(), events.Position{})
	if err != nil {
		t.Fatal(err)
	}
	if n := f.openStreams(); n != 1 {
		t.Fatalf("%d streams open on the server, want the subscription's", n)
	}
	stuck := make(chan error, 1)
	go func() {
		_, err := s.Append(context.Background(), "s", events.NoStream(), event("t.happened"))
		stuck <- err
	}()
	for i := 0; i < 500 && f.appendCount() == 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if err := bounded(t, time.Minute, s.Close); err != nil {
		t.Fatalf("close with a call in flight: %v", err)
	}
	if err := bounded(t, time.Minute, func() error { return <-stuck }); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("the call in flight at Close: %v, want ErrClosed", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := sub.Next(ctx); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("Next after Close: %v, want ErrClosed", err)
	}
	for i := 0; i < 500 && f.openStreams() > 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := f.openStreams(); n != 0 {
		t.Fatalf("%d streams still open on the server after Close", n)
	}
}

// A subscription the server drops is final: Next hands out what arrived,
// then an error that is neither ErrClosed nor a context error, so the
// caller knows to subscribe again from its checkpoint.
func TestDroppedSubscriptionTellsTheCallerToResubscribe(t *testing.T) {
	ev := event("order.placed")
	f := &fakeServer{}
	f.read = func(call int, req *api.ReadReq, srv api.Streams_ReadServer) error {
		if req.GetOptions().GetSubscription() == nil {
			return nil
		}
		if err := srv.Send(confirmation()); err != nil {
			return err
		}
		if err := srv.Send(eventResp(ev.ID, "orders-1", ev.Type, 0, 40)); err != nil {
			return err
		}
		return status.Error(codes.Aborted, "subscription dropped: leader changed")
	}
	s := openFake(t, f)
	sub, err := s.SubscribeAll(context.Background(), events.Position{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, err := sub.Next(ctx)
	if err != nil || rec.ID != ev.ID {
		t.Fatalf("first Next: %+v, %v", rec, err)
	}
	for range 2 {
		_, err = sub.Next(ctx)
		if err == nil || errors.Is(err, events.ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Next after the drop: %v, want the drop", err)
		}
		if !strings.Contains(err.Error(), "leader changed") || !strings.Contains(err.Error(), "subscribe again") {
			t.Fatalf("Next after the drop: %v, want its cause and what to do", err)
		}
	}
	// Resubscribing works (the store is not down: the drop was no outage).
	sub2, err := s.SubscribeAll(context.Background(), rec.Position)
	if err != nil {
		t.Fatalf("resubscribe: %v", err)
	}
	_ = sub2.Close()
}

func TestClosedStore(t *testing.T) {
	s := openFake(t, &fakeServer{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := context.Background()
	if _, err := s.Append(ctx, "x", events.Any(), event("t.happened")); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("Append after Close: %v, want ErrClosed", err)
	}
	if _, err := s.ReadAll(ctx, events.Position{}, 1); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("ReadAll after Close: %v, want ErrClosed", err)
	}
	if _, err := s.SubscribeAll(ctx, events.Position{}); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("SubscribeAll after Close: %v, want ErrClosed", err)
	}
}

// Event ids EventStoreDB would give back in another spelling, and types it
// would hide from subscribers, are refused before anything is sent.
func TestEventData(t *testing.T) {
	id := uuid.NewString()
	ok := events.Proposed{ID: id, Type: "order.placed"}
	if _, err := eventData("s", []events.Proposed{ok}); err != nil {
		t.Fatalf("a canonical id: %v", err)
	}
	for name, c := range map[string]struct {
		stream string
		evs    []events.Proposed
	}{
		"no events":       {"s", nil},
		"no stream":       {"", []events.Proposed{ok}},
		"upper case id":   {"s", []events.Proposed{{ID: strings.ToUpper(id), Type: "t"}}},
		"braced id":       {"s", []events.Proposed{{ID: "{" + id + "}", Type: "t"}}},
		"urn id":          {"s", []events.Proposed{{ID: "urn:uuid:" + id, Type: "t"}}},
		"id without dash": {"s", []events.Proposed{{ID: strings.ReplaceAll(id, "-", ""), Type: "t"}}},
		"nil uuid":        {"s", []events.Proposed{{ID: uuid.Nil.String(), Type: "t"}}},
		"no id":           {"s", []events.Proposed{{Type: "t"}}},
		"not a uuid":      {"s", []events.Proposed{{ID: "order-1", Type: "t"}}},
		"same id twice":   {"s", []events.Proposed{ok, ok}},
		"no type":         {"s", []events.Proposed{{ID: id}}},
		"system type":     {"s", []events.Proposed{{ID: id, Type: "$metadata"}}},
	} {
		if _, err := eventData(c.stream, c.evs); err == nil || events.IsConflict(err) {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
}

func TestAppendResult(t *testing.T) {
	if res, ok := appendResult(&esdb.WriteResult{CommitPosition: 9, PreparePosition: 9, NextExpectedVersion: 3}); !ok ||
		res != (events.AppendResult{Revision: 3, Position: events.Position{Commit: 9, Prepare: 9}}) {
		t.Fatalf("with a position: %+v %v", res, ok)
	}
	if res, ok := appendResult(&esdb.WriteResult{NextExpectedVersion: 3}); ok || res.Revision != 3 {
		t.Fatalf("without a position: %+v %v", res, ok)
	}
	if _, ok := appendResult(nil); ok {
		t.Fatal("nil result has a position")
	}
}

func TestIsConnectionError(t *testing.T) {
	for err, want := range map[error]bool{
		status.Error(codes.Unavailable, "gone"):                                       true,
		fmt.Errorf("wrapped: %w", status.Error(codes.Unavailable, "gone")):            true,
		errors.New("maximum discovery attempt count reached: 3. Last Error: refused"): true,
		status.Error(codes.PermissionDenied, "no"):                                    false,
		status.Error(codes.Aborted, "dropped"):                                        false,
		context.DeadlineExceeded:                                                      false,
		nil:                                                                           false,
	} {
		if got := isConnectionError(err); got != want {
			t.Errorf("isConnectionError(%v) = %v, want %v", err, got, want)
		}
	}
}

func TestClientLog(t *testing.T) {
	var buf strings.Builder
	l := &clientLog{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	logf := l.logging()
	logf(esdb.LogInfo, "discovery attempt %v/%v", 1, 3)
	logf(esdb.LogWarn, "error when reading server features from the best candidate '%s': %v", "h:2113", "connection refused")
	logf(esdb.LogError, "unexpected exception: %v", context.Canceled)
	if got := l.lastProblem(); !strings.Contains(got, "connection refused") {
		t.Fatalf("last problem %q", got)
	}
	out := buf.String()
	for _, want := range []string{`level=DEBUG msg="EventStoreDB client: discovery attempt 1/3"`, `level=WARN msg="EventStoreDB client: error when reading`, `level=DEBUG msg="EventStoreDB client: unexpected exception: context canceled"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
}

func TestExpectation(t *testing.T) {
	if _, ok := expectation(events.Any()).(esdb.Any); !ok {
		t.Error("Any is not esdb.Any")
	}
	if _, ok := expectation(events.NoStream()).(esdb.NoStream); !ok {
		t.Error("NoStream is not esdb.NoStream")
	}
	if r, ok := expectation(events.Exact(7)).(esdb.StreamRevision); !ok || r.Value != 7 {
		t.Errorf("Exact(7) is %#v", expectation(events.Exact(7)))
	}
}

func TestRecorded(t *testing.T) {
	id := uuid.New()
	created := time.Date(2025, 3, 1, 12, 0, 0, 0, time.FixedZone("CST", 8*3600))
	rec, ok := recorded(&esdb.ResolvedEvent{Event: &esdb.RecordedEvent{
		EventID: id, EventType: "user.created", StreamID: "user-1", EventNumber: 3,
		Position: esdb.Position{Commit: 10, Prepare: 9}, CreatedDate: created,
		Data: []byte(`{"a":1}`), UserMetadata: []byte{},
	}})
	if !ok || rec.ID != id.String() || rec.Stream != "user-1" || rec.Type != "user.created" || rec.Revision != 3 ||
		rec.Position != (events.Position{Commit: 10, Prepare: 9}) || rec.Created.Location() != time.UTC ||
		!rec.Created.Equal(created) || string(rec.Data) != `{"a":1}` || rec.Meta != nil {
		t.Fatalf("recorded: %+v", rec)
	}
	if _, ok := recorded(&esdb.ResolvedEvent{}); ok {
		t.Fatal("an unresolved link became an event")
	}
}

func TestHasCodeUnwraps(t *testing.T) {
	// The official client wraps its *esdb.Error with fmt.Errorf in places
	// (e.g. "could not send append request"); esdb.FromError misses those
	// and reports ok for a nil error, errors.As does neither.
	cfg, err := esdb.ParseConnectionString("esdb://" + deadPort(t) + "?tls=false")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = esdb.NoopLogging()
	c, err := esdb.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	_, err = c.AppendToStream(context.Background(), "x", esdb.AppendToStreamOptions{})
	wrapped := fmt.Errorf("could not send append request. Reason: %w", err)
	if !hasCode(wrapped, esdb.ErrorCodeConnectionClosed) {
		t.Fatalf("hasCode missed %v", wrapped)
	}
	if e, _ := esdb.FromError(wrapped); e.Code() == esdb.ErrorCodeConnectionClosed {
		t.Fatal("esdb.FromError unwraps now; hasCode may be simplified")
	}
	if hasCode(nil, esdb.ErrorCodeWrongExpectedVersion) {
		t.Fatal("hasCode(nil) is true")
	}
}

// WithProbeTimeout bounds how long Open waits for the server's first answer
// (default 10 s), so a misconfigured node fails at start with the cause.
func WithProbeTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.probeTimeout = d
		}
	}
}

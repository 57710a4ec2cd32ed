package esdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/storetest"
)

// TestConformance needs a server, e.g.
//
//	docker run -d -p 2113:2113 eventstore/eventstore:24.10 --insecure --run-projections=None
//	PLATFORM_ESDB_URL='esdb://127.0.0.1:2113?tls=false' go test ./events/esdb/
func TestConformance(t *testing.T) {
	url := os.Getenv("PLATFORM_ESDB_URL")
	if url == "" {
		t.Skip("EventStoreDB suite skipped: PLATFORM_ESDB_URL is not set")
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

// unreachable names a port nothing listens on, with discovery cut short.
const unreachable = "esdb://127.0.0.1:1?tls=false&maxDiscoverAttempts=2&discoveryInterval=10&gossipTimeout=1"

// TestRecoversFromFailedDiscovery runs without a server: after a failed
// discovery the official client refuses every call for good, so the adapter
// must replace it and really try again rather than report "closed" forever.
func TestRecoversFromFailedDiscovery(t *testing.T) {
	s, err := Open(unreachable)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev := events.Proposed{ID: uuid.NewString(), Type: "esdb.test", Data: []byte(`{}`)}
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := s.Append(ctx, "offline", events.Any(), ev)
		cancel()
		if err == nil {
			t.Fatalf("append %d to an unreachable server succeeded", i)
		}
		if hasCode(err, esdb.ErrorCodeConnectionClosed) || errors.Is(err, events.ErrClosed) {
			t.Fatalf("append %d: %v: the dead client was not replaced", i, err)
		}
		if !strings.Contains(err.Error(), "discovery") {
			t.Fatalf("append %d: %v, want a discovery failure", i, err)
		}
	}
	if _, err := s.ReadStream(context.Background(), "offline", 0, 0); err == nil || hasCode(err, esdb.ErrorCodeResourceNotFound) {
		t.Fatalf("read from an unreachable server: %v, want an error that is not not-found", err)
	}
}

// TestContextBoundsWaits runs without a server: while the official client
// discovers the node it ignores contexts and queues concurrent calls, which
// (once discovery gives up) would block forever. The adapter must return
// every call by its context and close without a panic.
func TestContextBoundsWaits(t *testing.T) {
	defer func(d time.Duration) { closeWait = d }(closeWait)
	closeWait = time.Second
	for name, url := range map[string]string{
		"discovery gives up":    unreachable,
		"discovery keeps going": "esdb://127.0.0.1:1?tls=false&gossipTimeout=1",
	} {
		t.Run(name, func(t *testing.T) {
			s, err := Open(url)
			if err != nil {
				t.Fatal(err)
			}
			const calls = 50
			returned := make(chan error, calls)
			for range calls {
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					defer cancel()
					_, err := s.Append(ctx, "offline", events.Any(), events.Proposed{ID: uuid.NewString(), Type: "esdb.test"})
					returned <- err
				}()
			}
			deadline := time.After(10 * time.Second)
			for i := range calls {
				select {
				case err := <-returned:
					if err == nil {
						t.Fatal("append to an unreachable server succeeded")
					}
				case <-deadline:
					t.Fatalf("only %d of %d calls returned", i, calls)
				}
			}
			closed := make(chan error, 1)
			go func() { closed <- s.Close() }()
			select {
			case err := <-closed:
				t.Logf("Close: %v", err)
			case <-time.After(closeWait + 5*time.Second):
				t.Fatal("Close hangs")
			}
		})
	}
}

func TestClosedStoreOffline(t *testing.T) {
	s, err := Open(unreachable)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := context.Background()
	ev := events.Proposed{ID: uuid.NewString(), Type: "esdb.test"}
	if _, err := s.Append(ctx, "x", events.Any(), ev); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("Append after Close: %v, want ErrClosed", err)
	}
	if _, err := s.ReadAll(ctx, events.Position{}, 1); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("ReadAll after Close: %v, want ErrClosed", err)
	}
	if _, err := s.SubscribeAll(ctx, events.Position{}); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("SubscribeAll after Close: %v, want ErrClosed", err)
	}
}

func TestAppendValidatesOffline(t *testing.T) {
	s, err := Open(unreachable)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Append(ctx, "x", events.Any()); err == nil {
		t.Fatal("empty append accepted")
	}
	if _, err := s.Append(ctx, "x", events.Any(), events.Proposed{ID: "not-a-uuid", Type: "t"}); err == nil || !strings.Contains(err.Error(), "UUID") {
		t.Fatalf("non-UUID id: %v", err)
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
	s, err := Open(unreachable)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	_, err = s.client.AppendToStream(context.Background(), "x", esdb.AppendToStreamOptions{})
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

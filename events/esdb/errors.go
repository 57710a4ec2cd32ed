package esdb

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/internal/rules"
)

// ErrUnavailable is matched (errors.Is) by every error the adapter returns
// while EventStoreDB is known to be unreachable: calls fail at once with the
// cause instead of queueing behind the client's reconnection.
var ErrUnavailable = errors.New("events/esdb: EventStoreDB is unavailable")

// UnavailableError says why and since when the server is unreachable.
type UnavailableError struct {
	Address string
	Since   time.Time
	Cause   error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("events/esdb: EventStoreDB at %s unavailable since %s: %v", e.Address, e.Since.UTC().Format(time.RFC3339), e.Cause)
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unwrap exposes the cause.
func (e *UnavailableError) Unwrap() error { return e.Cause }

func hasCode(err error, code esdb.ErrorCode) bool {
	var e *esdb.Error
	return errors.As(err, &e) && e.Code() == code
}

// isConnectionError reports whether err means the server cannot be reached
// (as opposed to a refusal by a reachable server): the client's dead state
// after a failed discovery, the failed discovery itself, or gRPC Unavailable.
func isConnectionError(err error) bool {
	if err == nil {
		return false
	}
	if hasCode(err, esdb.ErrorCodeConnectionClosed) || hasCode(err, esdb.ErrorUnavailable) {
		return true
	}
	if strings.Contains(err.Error(), "maximum discovery attempt count reached") {
		return true
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if s, ok := status.FromError(e); ok && s.Code() == codes.Unavailable {
			return true
		}
	}
	return false
}

// wrongVersion matches the official client's conflict message
// ("wrong expected version: expecting '2' but got '5'"), the only place this
// client version reports the stream's current revision.
var wrongVersion = regexp.MustCompile(`but got '([^']*)'`)

// conflictActual is the number of events the stream held according to a
// wrong-expected-version error, or -1 when the error does not say.
func conflictActual(err error) int64 {
	if err == nil {
		return -1
	}
	m := wrongVersion.FindStringSubmatch(err.Error())
	if m == nil {
		return -1
	}
	if m[1] == "no_stream" {
		return 0
	}
	rev, perr := strconv.ParseInt(m[1], 10, 64)
	if perr != nil || rev < 0 {
		return -1
	}
	return rev + 1
}

// appendResult turns the server's write result into the port's. The server
// reports the position of the last event it wrote (its TransactionEnd
// prepare, where $all places that event), and for an idempotent retry the
// position of the batch's last event; it sends no position only when it
// could not find one (servers before 22.6 for retries), then ok is false.
func appendResult(w *esdb.WriteResult) (res events.AppendResult, ok bool) {
	if w == nil {
		return events.AppendResult{}, false
	}
	res.Revision = w.NextExpectedVersion
	if w.CommitPosition == 0 && w.PreparePosition == 0 {
		return res, false
	}
	res.Position = events.Position{Commit: w.CommitPosition, Prepare: w.PreparePosition}
	return res, true
}

// eventData validates a batch and converts it for the client. It refuses
// what EventStoreDB would silently change or hide: an event id that is not
// a canonical lower-case UUID comes back in another spelling (and the nil
// UUID is replaced by a random one, which breaks idempotent retries); a
// $-typed event is a system event that subscribers never see; an empty type
// cannot be read back as anything.
func eventData(stream string, evs []events.Proposed) ([]esdb.EventData, error) {
	if stream == "" {
		return nil, errors.New("events/esdb: stream name is empty")
	}
	if len(evs) == 0 {
		return nil, rules.ErrNoEvents
	}
	seen := make(map[uuid.UUID]bool, len(evs))
	data := make([]esdb.EventData, len(evs))
	for i, ev := range evs {
		if err := rules.CheckType(ev.Type); err != nil {
			return nil, err
		}
		id, err := uuid.Parse(ev.ID)
		if err != nil {
			return nil, fmt.Errorf("events/esdb: event id %q is not a UUID: %w", ev.ID, err)
		}
		if id.String() != ev.ID {
			return nil, fmt.Errorf("events/esdb: event id %q is not a canonical UUID (EventStoreDB would record it as %s)", ev.ID, id)
		}
		if id == uuid.Nil {
			return nil, errors.New("events/esdb: the nil UUID is not an event id (the client would replace it with a random one)")
		}
		if seen[id] {
			return nil, fmt.Errorf("events: event id %s appears twice in one append", id)
		}
		seen[id] = true
		data[i] = esdb.EventData{EventID: id, EventType: ev.Type, ContentType: esdb.ContentTypeJson, Data: ev.Data, Metadata: ev.Meta}
	}
	return data, nil
}

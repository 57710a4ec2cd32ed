// Package rules holds the append rules the embedded adapters share, so that
// memory and bolt decide conflicts and idempotent retries exactly alike (and
// like EventStoreDB).
package rules

import (
	"errors"
	"fmt"
	"strings"

	"github.com/healthtech/partner-open-platform/events"
)

// ErrNoEvents refuses an empty append: it would record nothing and make
// AppendResult meaningless.
var ErrNoEvents = errors.New("events: append needs at least one event")

// Located is where an already recorded event ID sits in the log.
type Located struct {
	Stream   string
	Revision uint64
	Position events.Position
}

// Lookup finds the event recorded under id, if any.
type Lookup func(id string) (Located, bool, error)

// Check decides an append to a stream holding count events. It returns
// replayed=true with the original result when the batch is a retry of one
// already recorded at the expected place (nothing must be written then), a
// *events.ConflictError when the expectation fails, and an error for a batch
// that reuses event IDs elsewhere (writing it would corrupt the ID index).
func Check(stream string, expected events.ExpectedRevision, count uint64, evs []events.Proposed, lookup Lookup) (res events.AppendResult, replayed bool, err error) {
	if stream == "" {
		return res, false, errors.New("events: stream name is empty")
	}
	if len(evs) == 0 {
		return res, false, ErrNoEvents
	}
	if err := distinctIDs(evs); err != nil {
		return res, false, err
	}
	for _, ev := range evs {
		if err := CheckType(ev.Type); err != nil {
			return res, false, err
		}
	}
	first, found, err := lookup(evs[0].ID)
	if err != nil {
		return res, false, err
	}
	if found && first.Stream == stream {
		res, err := replay(stream, expected, count, first, evs, lookup)
		return res, err == nil, err
	}
	for _, ev := range evs {
		loc, found, err := lookup(ev.ID)
		if err != nil {
			return res, false, err
		}
		if found {
			return res, false, fmt.Errorf("events: event id %s is already recorded in stream %q at revision %d", ev.ID, loc.Stream, loc.Revision)
		}
	}
	if !expected.Matches(count) {
		return res, false, conflict(stream, expected, count)
	}
	return res, false, nil
}

// replay accepts a retried batch only if every event sits, in order, where
// the expectation put the original one.
func replay(stream string, expected events.ExpectedRevision, count uint64, first Located, evs []events.Proposed, lookup Lookup) (events.AppendResult, error) {
	start := first.Revision
	switch rev, exact := expected.Revision(); {
	case expected.IsNoStream():
		start = 0
	case exact:
		start = rev + 1
	}
	if first.Revision != start {
		return events.AppendResult{}, conflict(stream, expected, count)
	}
	last := first
	for i, ev := range evs[1:] {
		loc, found, err := lookup(ev.ID)
		if err != nil {
			return events.AppendResult{}, err
		}
		if !found || loc.Stream != stream || loc.Revision != start+uint64(i)+1 {
			return events.AppendResult{}, conflict(stream, expected, count)
		}
		last = loc
	}
	return events.AppendResult{Revision: last.Revision, Position: last.Position}, nil
}

// CheckType refuses event types no adapter can keep faithfully: an empty
// type, and a $-prefixed one, which EventStoreDB reserves for its own
// system events and hides from every subscriber; all adapters refuse them
// alike so that code tested on one behaves the same on the others.
func CheckType(typ string) error {
	switch {
	case typ == "":
		return errors.New("events: every proposed event needs a type")
	case strings.HasPrefix(typ, "$"):
		return fmt.Errorf("events: event type %q is reserved: types starting with $ are the event store's own", typ)
	}
	return nil
}

func distinctIDs(evs []events.Proposed) error {
	if len(evs) == 1 && evs[0].ID != "" {
		return nil
	}
	seen := make(map[string]struct{}, len(evs))
	for _, ev := range evs {
		if ev.ID == "" {
			return errors.New("events: every proposed event needs an ID")
		}
		if _, dup := seen[ev.ID]; dup {
			return fmt.Errorf("events: event id %s appears twice in one append", ev.ID)
		}
		seen[ev.ID] = struct{}{}
	}
	return nil
}

func conflict(stream string, expected events.ExpectedRevision, count uint64) error {
	return &events.ConflictError{Stream: stream, Expected: expected, Actual: int64(count)}
}

// CheckParts refuses a multi-stream append that no adapter could record as
// one atomic step faithfully: no parts, a stream named twice (its second
// part's expectation would have to see the first's writes), or an event ID
// used twice across parts (the ID index would hold one of them only).
func CheckParts(parts []events.StreamAppend) error {
	if len(parts) == 0 {
		return errors.New("events: a multi-stream append needs at least one part")
	}
	streams := make(map[string]struct{}, len(parts))
	ids := map[string]struct{}{}
	for _, p := range parts {
		if _, dup := streams[p.Stream]; dup {
			return fmt.Errorf("events: stream %q appears twice in one multi-stream append", p.Stream)
		}
		streams[p.Stream] = struct{}{}
		for _, ev := range p.Events {
			if ev.ID == "" {
				continue // Check reports it with the part
			}
			if _, dup := ids[ev.ID]; dup {
				return fmt.Errorf("events: event id %s appears twice in one multi-stream append", ev.ID)
			}
			ids[ev.ID] = struct{}{}
		}
	}
	return nil
}

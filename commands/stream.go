package commands

import (
	"context"
	"errors"
	"fmt"

	"github.com/healthtech/partner-open-platform/events"
)

// maxAttempts bounds the load-decide-append loop under contention.
const maxAttempts = 20

// Meta is who asked for a command; it becomes the events' metadata.
type Meta struct {
	AppID     int64
	Actor     string
	RequestID string
	// Traceparent is the request's trace context (traced fills it in).
	Traceparent string
}

func (m Meta) events() events.Metadata {
	return events.Metadata{AppID: m.AppID, Actor: m.Actor, RequestID: m.RequestID, Traceparent: m.Traceparent}
}

// streams loads aggregates and appends their decisions with the expected revision.
type streams struct {
	store events.Store
	reg   *events.Registry
}

// load applies every event of the stream in order and returns the version
// loaded (number of events) and the position of the last one.
func (s streams) load(ctx context.Context, stream string, apply func(events.Envelope)) (uint64, events.Position, error) {
	recs, err := s.store.ReadStream(ctx, stream, 0, 0)
	if err != nil {
		return 0, events.Position{}, fmt.Errorf("load %s: %w", stream, err)
	}
	var pos events.Position
	for _, r := range recs {
		env, err := s.reg.Decode(r)
		if err != nil {
			return 0, events.Position{}, fmt.Errorf("load %s: %w", stream, err)
		}
		apply(env)
		pos = r.Position
	}
	return uint64(len(recs)), pos, nil
}

// append writes the payloads after the loaded version; a conflict comes back
// as events.ErrConflict for the caller's retry loop.
func (s streams) append(ctx context.Context, stream string, version uint64, meta Meta, ps ...events.Payload) (events.AppendResult, error) {
	evs, err := s.encode(meta.traced(ctx), ps...)
	if err != nil {
		return events.AppendResult{}, err
	}
	return s.store.Append(ctx, stream, events.AfterVersion(version), evs...)
}

// encode turns decided payloads into events to append, each with a fresh
// ID unless the decision chose one (withID).
func (s streams) encode(meta Meta, ps ...events.Payload) ([]events.Proposed, error) {
	evs := make([]events.Proposed, 0, len(ps))
	for _, p := range ps {
		ev, err := s.encodeOne(meta, p)
		if err != nil {
			return nil, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// encodeOne encodes a payload with the command's metadata, or with what the
// decision wrapped it in (withID, forRequest).
func (s streams) encodeOne(meta Meta, p events.Payload) (events.Proposed, error) {
	id := ""
	if w, ok := p.(withID); ok {
		id, p = w.id, w.Payload
	}
	if w, ok := p.(forRequest); ok {
		meta, p = w.meta, w.Payload
	}
	ev, err := s.reg.Encode(p, meta.events())
	if id != "" {
		ev.ID = id
	}
	return ev, err
}

// decided is one stream's decided payloads and the version they follow.
type decided struct {
	stream  string
	version uint64
	ps      []events.Payload
	// unread: version was assumed (a stream never written), not read, so
	// a conflict on it is not a lost race but the guess found wrong.
	unread bool
}

// appendAll appends the parts in one atomic multi-stream append (one
// commit) where the store can, otherwise one after another in order (a crash
// between two leaves the earlier ones, which the command's retry completes,
// as before multi-stream appends). A conflict on any part comes back as
// events.ErrConflict with nothing of the atomic append written. The result
// is the last part's revision at the position after which every part is
// visible.
func (s streams) appendAll(ctx context.Context, meta Meta, parts ...decided) (events.AppendResult, error) {
	meta = meta.traced(ctx)
	appends := make([]events.StreamAppend, len(parts))
	for i, p := range parts {
		evs, err := s.encode(meta, p.ps...)
		if err != nil {
			return events.AppendResult{}, err
		}
		appends[i] = events.StreamAppend{Stream: p.stream, Expected: events.AfterVersion(p.version), Events: evs}
	}
	res, err := events.AppendMulti(ctx, s.store, appends...)
	if err == nil {
		return events.AppendResult{Revision: res[len(res)-1].Revision, Position: events.Last(res)}, nil
	}
	if !errors.Is(err, events.ErrMultiStreamUnsupported) {
		return events.AppendResult{}, err
	}
	var last events.AppendResult
	for _, a := range appends {
		if last, err = s.store.Append(ctx, a.Stream, a.Expected, a.Events...); err != nil {
			return events.AppendResult{}, err
		}
	}
	return last, nil
}

package memory

import (
	"math"
	"time"
	"unsafe"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// deliveryRow is a delivery as the read model keeps it, in its map slot
// (Go keeps a value of more than 128 bytes out of the slot, in an
// allocation of its own; a projections.Delivery is 256): the id is the
// map's key, the status a code, the event type a number in the read
// model's table of them, the subject the subject's entry in the subjects
// index (whose one copy of the name every row of it shares), the times
// microseconds, the positions one sequence number each when commit equals
// prepare (the embedded log's), the body a string; what only some
// deliveries have (an attempt's outcome, the next attempt, positions of
// another form, a status or event type of no code) is behind more, nil for
// most. Every byte of the row costs about 1.4 in the map's slots, the
// largest holder of the read model after the bodies.
//
// The body's string shares the bytes of the delivery it was packed from:
// packDelivery takes only deliveries the store owns and never writes to.
type deliveryRow struct {
	appID, endpointID int64
	cursor, source    uint64 // Commit (= Prepare) unless more.positions
	created, updated  int64  // UnixMicro, UTC
	sourceEventID     string
	body              string
	subject           *subjectRows // nil: no subject
	more              *deliveryMore
	attempts          int32
	eventType         uint16 // in eventTypes; 0: more.eventType
	status            uint8  // statusCodes; 0: more.status
	hasBody           bool   // Body was non-nil
}

type deliveryMore struct {
	positions      bool // cursor and source below, not the row's sequence numbers
	cursor, source events.Position
	status         string
	eventType      string
	attempts       int // when it does not fit the row's int32
	nextAttemptAt  *time.Time
	lastStatus     *int
	lastError      *string
	lastErrorClass *string
}

// eventTypes numbers the deliveries' event types: a few dozen names, which
// each row held as a string of its own (16 bytes in the slot, and a copy of
// the name for every decoded event). Number 0 is the empty name; a type past
// the table's reach is kept in the row's more.
type eventTypes struct {
	names []string
	ids   map[string]uint16
}

// maxEventTypes is how many names the table numbers (a variable for tests).
var maxEventTypes = math.MaxUint16

func newEventTypes() eventTypes {
	return eventTypes{names: []string{""}, ids: map[string]uint16{"": 0}}
}

// code is name's number, or false when the table is full.
func (e *eventTypes) code(name string) (uint16, bool) {
	if c, ok := e.ids[name]; ok {
		return c, true
	}
	if len(e.names) > maxEventTypes {
		return 0, false
	}
	c := uint16(len(e.names))
	e.names = append(e.names, name)
	e.ids[name] = c
	return c, true
}

var statusNames = [...]string{1: domain.DeliveryPending, 2: domain.DeliveryRetrying, 3: domain.DeliveryDelivered,
	4: domain.DeliveryAbandoned, 5: domain.DeliveryDeadLetter, 6: domain.DeliverySkipped}

func statusCode(status string) uint8 {
	for i := 1; i < len(statusNames); i++ {
		if statusNames[i] == status {
			return uint8(i)
		}
	}
	return 0
}

// seqForm says whether p is a sequence number (commit = prepare).
func seqForm(p events.Position) bool { return p.Commit == p.Prepare }

// packDelivery makes the row of d, whose times are normalized (UTC, whole
// microseconds) and whose body and pointees the store owns from now on,
// with its event type numbered in types and subj its subject's entry (nil
// for none).
func packDelivery(d projections.Delivery, types *eventTypes, subj *subjectRows) deliveryRow {
	r := deliveryRow{
		appID: d.AppID, endpointID: d.EndpointID,
		cursor: d.Cursor.Commit, source: d.SourcePosition.Commit,
		created: d.CreatedAt.UnixMicro(), updated: d.UpdatedAt.UnixMicro(),
		sourceEventID: d.SourceEventID, subject: subj,
		body: unsafe.String(unsafe.SliceData(d.Body), len(d.Body)), hasBody: d.Body != nil,
		attempts: int32(d.Attempts), status: statusCode(d.Status),
	}
	var m deliveryMore
	need := false
	if !seqForm(d.Cursor) || !seqForm(d.SourcePosition) {
		m.positions, m.cursor, m.source, need = true, d.Cursor, d.SourcePosition, true
	}
	if r.status == 0 {
		m.status, need = d.Status, true
	}
	if c, ok := types.code(d.EventType); ok {
		r.eventType = c
	} else {
		m.eventType, need = d.EventType, true
	}
	if int(r.attempts) != d.Attempts {
		m.attempts, need = d.Attempts, true
	}
	if d.NextAttemptAt != nil || d.LastStatus != nil || d.LastError != nil || d.LastErrorClass != nil {
		m.nextAttemptAt, m.lastStatus, m.lastError, m.lastErrorClass = d.NextAttemptAt, d.LastStatus, d.LastError, d.LastErrorClass
		need = true
	}
	if need {
		r.more = &m
	}
	return r
}

// cursorAt is the delivery's Cursor.
func (r *deliveryRow) cursorAt() events.Position {
	if r.more != nil && r.more.positions {
		return r.more.cursor
	}
	return events.Position{Commit: r.cursor, Prepare: r.cursor}
}

// view is the delivery id of row r, whose event type is numbered in
// types: its body and pointees are the row's own, to read only
// (copyDelivery before handing it out).
func (r *deliveryRow) view(id string, types *eventTypes) projections.Delivery {
	d := projections.Delivery{
		DeliveryID: id, AppID: r.appID, EndpointID: r.endpointID, EventType: types.names[r.eventType],
		SourceEventID: r.sourceEventID, Attempts: int(r.attempts),
		Cursor:         events.Position{Commit: r.cursor, Prepare: r.cursor},
		SourcePosition: events.Position{Commit: r.source, Prepare: r.source},
		CreatedAt:      time.UnixMicro(r.created).UTC(), UpdatedAt: time.UnixMicro(r.updated).UTC(),
	}
	if r.subject != nil {
		d.Subject = r.subject.subject
	}
	if r.hasBody {
		d.Body = unsafe.Slice(unsafe.StringData(r.body), len(r.body))
		if d.Body == nil { // an empty, non-nil body
			d.Body = []byte{}
		}
	}
	d.Status = statusNames[r.status]
	if m := r.more; m != nil {
		if m.positions {
			d.Cursor, d.SourcePosition = m.cursor, m.source
		}
		if r.status == 0 {
			d.Status = m.status
		}
		if m.eventType != "" {
			d.EventType = m.eventType
		}
		if m.attempts != 0 {
			d.Attempts = m.attempts
		}
		d.NextAttemptAt, d.LastStatus, d.LastError, d.LastErrorClass = m.nextAttemptAt, m.lastStatus, m.lastError, m.lastErrorClass
	}
	return d
}

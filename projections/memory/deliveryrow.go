package memory

import (
	"time"
	"unsafe"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// deliveryRow is a delivery as the read model keeps it. A
// projections.Delivery is 256 bytes, and Go's maps keep a value of more than
// 128 bytes out of the slot, in an allocation of its own: every delivery
// cost its slot plus 256 bytes. This row fits in the slot: the id is the
// map's key, the status a code, the times microseconds, the positions one
// sequence number each when commit equals prepare (the embedded log's), the
// body a string; what only some deliveries have (an attempt's outcome, the
// next attempt, positions of another form, a status of no code) is behind
// more, nil for most.
//
// The body's string shares the bytes of the delivery it was packed from:
// packDelivery takes only deliveries the store owns and never writes to.
type deliveryRow struct {
	appID, endpointID int64
	cursor, source    uint64 // Commit (= Prepare) unless more.positions
	created, updated  int64  // UnixMicro, UTC
	sourceEventID     string
	eventType         string
	subject           string
	body              string
	more              *deliveryMore
	attempts          int32
	status            uint8 // statusCodes; 0: more.status
	hasBody           bool  // Body was non-nil
}

type deliveryMore struct {
	positions      bool // cursor and source below, not the row's sequence numbers
	cursor, source events.Position
	status         string
	attempts       int // when it does not fit the row's int32
	nextAttemptAt  *time.Time
	lastStatus     *int
	lastError      *string
	lastErrorClass *string
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
// microseconds) and whose body and pointees the store owns from now on.
func packDelivery(d projections.Delivery) deliveryRow {
	r := deliveryRow{
		appID: d.AppID, endpointID: d.EndpointID,
		cursor: d.Cursor.Commit, source: d.SourcePosition.Commit,
		created: d.CreatedAt.UnixMicro(), updated: d.UpdatedAt.UnixMicro(),
		sourceEventID: d.SourceEventID, eventType: d.EventType, subject: d.Subject,
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

// view is the delivery of row r with id: its body and pointees are the
// row's own, to read only (copyDelivery before handing it out).
func (r *deliveryRow) view(id string) projections.Delivery {
	d := projections.Delivery{
		DeliveryID: id, AppID: r.appID, EndpointID: r.endpointID, EventType: r.eventType,
		SourceEventID: r.sourceEventID, Subject: r.subject, Attempts: int(r.attempts),
		Cursor:         events.Position{Commit: r.cursor, Prepare: r.cursor},
		SourcePosition: events.Position{Commit: r.source, Prepare: r.source},
		CreatedAt:      time.UnixMicro(r.created).UTC(), UpdatedAt: time.UnixMicro(r.updated).UTC(),
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
		if m.attempts != 0 {
			d.Attempts = m.attempts
		}
		d.NextAttemptAt, d.LastStatus, d.LastError, d.LastErrorClass = m.nextAttemptAt, m.lastStatus, m.lastError, m.lastErrorClass
	}
	return d
}

package memory

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// deliveryRow is a delivery as the read model keeps it, in a chunk of
// its table (deliveryTable): the id its 16 bytes when it is a uuid in its
// canonical text (as the platform makes them; any other id goes in more),
// the status a code, the event type a number in the read
// model's table of them, the subject the subject's entry in the subjects
// index (whose one copy of the name every row of it shares), the times
// microseconds, the positions one sequence number each when commit equals
// prepare (the embedded log's), the source event's id its 16 bytes when it
// is a uuid in its canonical text, the body without the start the row
// already holds (bodyTail), or nothing once the delivery is final and its
// body is read from the log (bodyLogged: Store.KeepBodiesInLog); what only
// some deliveries have (an attempt's
// outcome, the next attempt, positions of another form, a status or event
// type of no code, a source id of another form) is behind more, nil for
// most.
type deliveryRow struct {
	id                uuid16 // when flags&idUUID
	appID, endpointID int64
	cursor, source    uint64       // Commit (= Prepare) unless more.positions
	created, updated  int64        // UnixMicro, UTC
	sourceEventID     uuid16       // when flags&sourceUUID
	body              string       // the whole body, its tail when flags&bodyTail, "" when flags&bodyLogged
	subject           *subjectRows // nil: no subject
	more              *deliveryMore
	attempts          int32
	eventType         uint16 // in eventTypes; 0: more.eventType
	status            uint8  // statusCodes; 0: more.status
	flags             uint8
}

// The row's flags.
const (
	bodyTail   uint8 = 1 << iota // body is what follows the head appendBodyHead writes
	sourceUUID                   // sourceEventID holds the source event's id
	idUUID                       // id holds the delivery's id
	bodyLogged                   // the body is the one of the event at cursor, read from the log
)

type deliveryMore struct {
	id             string // the delivery's id when it is no canonical uuid
	positions      bool   // cursor and source below, not the row's sequence numbers
	cursor, source events.Position
	status         string
	eventType      string
	sourceEventID  string // when it is no canonical uuid
	attempts       int    // when it does not fit the row's int32
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
// microseconds) and whose pointees the store owns from now on, with its
// event type numbered in types and subj its subject's entry (nil for
// none). A nil body is one in the log (bodyLogged), as view gives it. A
// body that starts as bodyHead writes it keeps only the rest, in
// an allocation of its own (so that the whole body is not kept alive by
// it); any other body is copied, or kept sharing d's bytes when
// bodyOwned says the store owns them. So a caller's body is copied here
// once at most, whichever form the row keeps.
func packDelivery(d projections.Delivery, types *eventTypes, subj *subjectRows, bodyOwned bool) deliveryRow {
	r := deliveryRow{
		appID: d.AppID, endpointID: d.EndpointID,
		cursor: d.Cursor.Commit, source: d.SourcePosition.Commit,
		created: d.CreatedAt.UnixMicro(), updated: d.UpdatedAt.UnixMicro(),
		subject:  subj,
		attempts: int32(d.Attempts), status: statusCode(d.Status),
	}
	var m deliveryMore
	need := false
	if u, ok := parseUUID(d.DeliveryID); ok {
		r.id, r.flags = u, r.flags|idUUID
	} else {
		m.id, need = d.DeliveryID, true
	}
	switch n := headLen(d.Body, d.EventType, d.DeliveryID, d.AppID); {
	case d.Body == nil: // view's for a body in the log
		r.flags |= bodyLogged
	case n > 0:
		r.body, r.flags = string(d.Body[n:]), r.flags|bodyTail
	case bodyOwned || len(d.Body) == 0: // an empty body shares nothing, and reads back empty, not nil
		r.body = unsafe.String(unsafe.SliceData(d.Body), len(d.Body))
	default:
		r.body = string(d.Body)
	}
	if u, ok := parseUUID(d.SourceEventID); ok {
		r.sourceEventID, r.flags = u, r.flags|sourceUUID
	} else if d.SourceEventID != "" {
		m.sourceEventID, need = d.SourceEventID, true
	}
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
		// A copy, so that m stays on the stack for the rows that need
		// none (most): m's own address taken would put it on the heap on
		// every call.
		more := m
		r.more = &more
	}
	return r
}

// ownTexts is r with the texts it shares with the delivery it was packed
// from (a body kept whole, an id or source event id of no uuid form, the
// last error) copied, for a row packed from a snapshot's views
// (snapfile.Image). r's more, when it is there, is packDelivery's, made
// for r alone: its texts are copied in place, so no second more leaves
// the first as garbage among the rows that stay.
func ownTexts(r deliveryRow) deliveryRow {
	if r.flags&(bodyTail|bodyLogged) == 0 {
		r.body = strings.Clone(r.body)
	}
	if m := r.more; m != nil {
		m.id, m.sourceEventID = strings.Clone(m.id), strings.Clone(m.sourceEventID)
		if m.lastError != nil {
			e := strings.Clone(*m.lastError)
			m.lastError = &e
		}
	}
	return r
}

// withState is r with st's state (Erased aside), whose times are
// normalized and whose pointees the store owns. r's more is never written:
// a kept image or an undo may hold it, so a state that needs one gets a
// new one.
func (r deliveryRow) withState(st projections.DeliveryState) deliveryRow {
	r.status, r.attempts, r.updated = statusCode(st.Status), int32(st.Attempts), st.UpdatedAt.UnixMicro()
	var m deliveryMore
	if r.more != nil {
		m = *r.more
	}
	m.status, m.attempts = "", 0
	if r.status == 0 {
		m.status = st.Status
	}
	if int(r.attempts) != st.Attempts {
		m.attempts = st.Attempts
	}
	m.nextAttemptAt, m.lastStatus, m.lastError, m.lastErrorClass = st.NextAttemptAt, st.LastStatus, st.LastError, st.LastErrorClass
	r.more = nil
	if m != (deliveryMore{}) {
		more := m // on the heap only when kept (see packDelivery)
		r.more = &more
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

// deliveryID is the delivery's id (made anew from its 16 bytes for a uuid).
func (r *deliveryRow) deliveryID() string {
	if r.flags&idUUID != 0 {
		return r.id.String()
	}
	return r.more.id
}

// compareFeed compares the row's place in the feed with k, as compareFeed
// does, without making the row's id.
func (r *deliveryRow) compareFeed(k feedKey) int {
	if c := comparePos(r.cursorAt(), k.cursor); c != 0 {
		return c
	}
	if r.flags&idUUID == 0 {
		return strings.Compare(r.more.id, k.id)
	}
	var text [36]byte
	r.id.encode(&text)
	return strings.Compare(unsafe.String(&text[0], len(text)), k.id)
}

// head is the delivery of row r, whose event type is numbered in
// types, without its id, body and source event id: what a filter reads. Its
// pointees are the row's own, to read only.
func (r *deliveryRow) head(types *eventTypes) projections.Delivery {
	d := projections.Delivery{
		AppID: r.appID, EndpointID: r.endpointID, EventType: types.names[r.eventType],
		Attempts:       int(r.attempts),
		Cursor:         events.Position{Commit: r.cursor, Prepare: r.cursor},
		SourcePosition: events.Position{Commit: r.source, Prepare: r.source},
		CreatedAt:      time.UnixMicro(r.created).UTC(), UpdatedAt: time.UnixMicro(r.updated).UTC(),
	}
	if r.subject != nil {
		d.Subject = r.subject.subject
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

// view is the delivery of row r, whose id is id (the text the row was
// found by, or deliveryID's) and whose event type is numbered in types,
// whole but for a body in the log (nil: bodyLogged): a body kept as its
// tail is written out anew, any other body and the pointees are the row's
// own, to read only (read before handing it out).
func (r *deliveryRow) view(id string, types *eventTypes) projections.Delivery {
	d := r.head(types)
	d.DeliveryID = id
	switch {
	case r.flags&bodyTail != 0:
		d.Body = appendBodyHead(make([]byte, 0, headSize(d.EventType, id, d.AppID)+len(r.body)), d.EventType, id, d.AppID)
		d.Body = append(d.Body, r.body...)
	case r.flags&bodyLogged != 0: // nil: in the log
	default:
		d.Body = unsafe.Slice(unsafe.StringData(r.body), len(r.body))
		if d.Body == nil { // erased: empty, which an image tells from nil
			d.Body = []byte{}
		}
	}
	switch {
	case r.flags&sourceUUID != 0:
		d.SourceEventID = r.sourceEventID.String()
	case r.more != nil:
		d.SourceEventID = r.more.sourceEventID
	}
	return d
}

// read is the delivery id of row r as the store's reads answer it: its
// body (never nil, as the Postgres store reads an empty bytea, but for a
// body in the log, which Store.fillBodies then reads) and pointees are the
// caller's own.
func (r *deliveryRow) read(id string, types *eventTypes) projections.Delivery {
	d := r.view(id, types)
	if r.flags&(bodyTail|bodyLogged) == 0 {
		d.Body = append([]byte{}, d.Body...)
	}
	d.NextAttemptAt, d.LastStatus, d.LastError = cloneTime(d.NextAttemptAt), cloneIntPtr(d.LastStatus), cloneStr(d.LastError)
	d.LastErrorClass = cloneStr(d.LastErrorClass)
	return d
}

// appendBodyHead appends the start every rendered webhook body has (its
// event type, delivery id and app id: webhooks.Render), which the row
// holds already.
func appendBodyHead(b []byte, eventType, id string, appID int64) []byte {
	b = append(b, `{"event":"`...)
	b = append(b, eventType...)
	b = append(b, `","delivery_id":"`...)
	b = append(b, id...)
	b = append(b, `","app_id":`...)
	return strconv.AppendInt(b, appID, 10)
}

func headSize(eventType, id string, appID int64) int {
	var digits [20]byte
	return len(`{"event":"","delivery_id":"","app_id":`) + len(eventType) + len(id) + len(strconv.AppendInt(digits[:0], appID, 10))
}

// headLen is the length of body's head as appendBodyHead writes it, or 0
// when body does not start so. Whatever follows (even more digits of the
// app id) is the tail: the head is written again from the same row.
func headLen(body []byte, eventType, id string, appID int64) int {
	n := headSize(eventType, id, appID)
	if len(body) < n {
		return 0
	}
	var buf [160]byte
	if string(appendBodyHead(buf[:0], eventType, id, appID)) != string(body[:n]) {
		return 0
	}
	return n
}

// uuid16 is a uuid's 16 bytes.
type uuid16 [16]byte

// parseUUID reads s if it is a uuid in its canonical text (lower-case hex,
// hyphens after the 8th, 12th, 16th and 20th digit), which String gives
// back byte for byte. Every lookup of a delivery by id parses it, so it
// reads its digits eight at a time (hex8) rather than through hex.Decode.
func parseUUID(s string) (uuid16, bool) {
	var u uuid16
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	a, ok1 := hex8(be32(s[0:4])<<32 | be32(s[4:8]))
	b, ok2 := hex8(be32(s[9:13])<<32 | be32(s[14:18]))
	c, ok3 := hex8(be32(s[19:23])<<32 | be32(s[24:28]))
	d, ok4 := hex8(be32(s[28:32])<<32 | be32(s[32:36]))
	if !(ok1 && ok2 && ok3 && ok4) {
		return u, false
	}
	binary.BigEndian.PutUint32(u[0:], a)
	binary.BigEndian.PutUint32(u[4:], b)
	binary.BigEndian.PutUint32(u[8:], c)
	binary.BigEndian.PutUint32(u[12:], d)
	return u, true
}

// be32 is s's first four bytes as a big-endian number.
func be32(s string) uint64 {
	_ = s[3]
	return uint64(s[0])<<24 | uint64(s[1])<<16 | uint64(s[2])<<8 | uint64(s[3])
}

// hex8 reads eight lower-case hex digits, the first in w's top byte, as
// four bytes, or false if any byte of w is another. Each byte's range is
// told by adding to it, in every byte at once, what sets its top bit from
// a bound on; a byte at or above 0x80 falls in neither range, whatever it
// carries into the next, so w is refused. A letter's value is its low four
// bits plus 9.
func hex8(w uint64) (uint32, bool) {
	const ones, top = 0x0101010101010101, 0x8080808080808080
	digit := (w + ones*(0x80-'0')) &^ (w + ones*(0x80-'9'-1))
	letter := (w + ones*(0x80-'a')) &^ (w + ones*(0x80-'f'-1))
	if ^(digit|letter)&top != 0 {
		return 0, false
	}
	n := w&(ones*0x0f) + (letter&top)>>7*9
	// Each pair of nibbles into one byte, then the four bytes together.
	n = n>>4&0x00f000f000f000f0 | n&0x000f000f000f000f
	n = (n | n>>8) & 0x0000ffff0000ffff
	return uint32(n | n>>16), true
}

// String is u's canonical text.
func (u uuid16) String() string {
	var out [36]byte
	u.encode(&out)
	return string(out[:])
}

// encode writes u's canonical text to out.
func (u uuid16) encode(out *[36]byte) {
	hex.Encode(out[0:8], u[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], u[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], u[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], u[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], u[10:16])
}

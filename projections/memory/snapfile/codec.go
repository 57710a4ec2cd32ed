package snapfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// The version 3 row codec: each section of a table is its row count, then
// its rows, every field in declaration order as a varint (integers, bools),
// a length-prefixed byte string (strings, byte slices), a presence byte
// before an optional value, or a length-prefixed time.Time binary form
// (the same bytes gob wrote for a time, so zones survive as they did).
// No reflection and no type descriptions: a start spent most of its decode
// time in gob's reflective walk. Changing a row type means a new format
// version (and reading the old one), as with the field list.

// errCodec is what a malformed section decodes to (wrapped in
// ErrInvalid by the caller).
var errCodec = errors.New("malformed row")

// rowEncoder appends rows to buf.
type rowEncoder struct{ buf []byte }

func (e *rowEncoder) int(v int64)   { e.buf = binary.AppendVarint(e.buf, v) }
func (e *rowEncoder) uint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }

func (e *rowEncoder) bool(v bool) {
	if v {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
}

func (e *rowEncoder) str(s string) {
	e.uint(uint64(len(s)))
	e.buf = append(e.buf, s...)
}

func (e *rowEncoder) bytes(b []byte) {
	// nil and empty differ for a Body or RawData: 0 is nil, n+1 is n bytes.
	if b == nil {
		e.uint(0)
		return
	}
	e.uint(uint64(len(b)) + 1)
	e.buf = append(e.buf, b...)
}

func (e *rowEncoder) time(t time.Time) {
	at := len(e.buf)
	e.buf = append(e.buf, 0)
	b, err := t.AppendBinary(e.buf)
	if err != nil { // a zone offset no binary form holds: keep the instant in UTC
		b, _ = t.UTC().AppendBinary(e.buf)
	}
	e.buf = b
	e.buf[at] = byte(len(e.buf) - at - 1)
}

func (e *rowEncoder) optStr(p *string) {
	e.bool(p != nil)
	if p != nil {
		e.str(*p)
	}
}

func (e *rowEncoder) optInt(p *int64) {
	e.bool(p != nil)
	if p != nil {
		e.int(*p)
	}
}

func (e *rowEncoder) optIntN(p *int) {
	e.bool(p != nil)
	if p != nil {
		e.int(int64(*p))
	}
}

func (e *rowEncoder) optTime(p *time.Time) {
	e.bool(p != nil)
	if p != nil {
		e.time(*p)
	}
}

func (e *rowEncoder) pos(p events.Position) {
	e.uint(p.Commit)
	e.uint(p.Prepare)
}

func (e *rowEncoder) strs(s []string) {
	e.uint(uint64(len(s)))
	for _, v := range s {
		e.str(v)
	}
}

// rowDecoder reads rows from buf; the first malformed field sets err and
// every later read returns zero values, so a row's decode checks err once.
type rowDecoder struct {
	buf []byte
	off int
	err error
	// interned keeps one copy of each short, repeated value (statuses,
	// genders, event types) instead of one per row.
	interned map[string]string
	// views: texts and byte slices are views of buf, not copies (see
	// rowCodec.views).
	views bool
	// blocks: optional fields point into blocks shared by the section's
	// rows (strBlock, intBlock, timeBlock), not into allocations of their own (see
	// rowCodec.blocks).
	blocks    bool
	strBlock  []string
	intBlock  []int64
	timeBlock []time.Time
}

// blockLen is how many optional values of one type a block holds.
const blockLen = 256

// inBlock appends v to *block (a new block when it is full) and returns
// where it went.
func inBlock[V any](block *[]V, v V) *V {
	if len(*block) == cap(*block) {
		*block = make([]V, 0, blockLen)
	}
	*block = append(*block, v)
	return &(*block)[len(*block)-1]
}

func (d *rowDecoder) fail() {
	if d.err == nil {
		d.err = fmt.Errorf("%w at byte %d", errCodec, d.off)
	}
}

func (d *rowDecoder) int() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.buf[d.off:])
	if n <= 0 {
		d.fail()
		return 0
	}
	d.off += n
	return v
}

func (d *rowDecoder) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf[d.off:])
	if n <= 0 {
		d.fail()
		return 0
	}
	d.off += n
	return v
}

func (d *rowDecoder) bool() bool {
	if d.err != nil {
		return false
	}
	if d.off >= len(d.buf) || d.buf[d.off] > 1 {
		d.fail()
		return false
	}
	d.off++
	return d.buf[d.off-1] == 1
}

// raw returns the next n bytes (a view of buf).
func (d *rowDecoder) raw(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.buf)-d.off) {
		d.fail()
		return nil
	}
	b := d.buf[d.off : d.off+int(n)]
	d.off += int(n)
	return b
}

func (d *rowDecoder) str() string {
	b := d.raw(d.uint())
	if d.views && len(b) > 0 {
		return unsafe.String(&b[0], len(b))
	}
	return string(b)
}

// short is a string that repeats across rows: one copy is kept.
func (d *rowDecoder) short() string {
	b := d.raw(d.uint())
	if len(b) == 0 {
		return ""
	}
	if s, ok := d.interned[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(d.interned) < 4096 {
		if d.interned == nil {
			d.interned = map[string]string{}
		}
		d.interned[s] = s
	}
	return s
}

func (d *rowDecoder) bytes() []byte {
	n := d.uint()
	if n == 0 || d.err != nil {
		return nil
	}
	b := d.raw(n - 1)
	if d.views && b != nil {
		return b[:len(b):len(b)]
	}
	return append([]byte{}, b...)
}

func (d *rowDecoder) time() time.Time {
	b := d.raw(uint64(d.byte()))
	if d.err != nil {
		return time.Time{}
	}
	// time.Time's binary form: version, seconds (8), nanoseconds (4),
	// zone; UnmarshalBinary takes nanoseconds past a second as they are.
	if len(b) < 13 || binary.BigEndian.Uint32(b[9:13]) >= 1e9 {
		d.fail()
		return time.Time{}
	}
	var t time.Time
	if err := t.UnmarshalBinary(b); err != nil {
		d.fail()
		return time.Time{}
	}
	return t
}

func (d *rowDecoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.buf) {
		d.fail()
		return 0
	}
	d.off++
	return d.buf[d.off-1]
}

func (d *rowDecoder) optStr() *string {
	if !d.bool() {
		return nil
	}
	return d.strPtr(d.str())
}

func (d *rowDecoder) optShort() *string {
	if !d.bool() {
		return nil
	}
	return d.strPtr(d.short())
}

func (d *rowDecoder) strPtr(s string) *string {
	if d.blocks {
		return inBlock(&d.strBlock, s)
	}
	return &s
}

func (d *rowDecoder) optInt() *int64 {
	if !d.bool() {
		return nil
	}
	v := d.int()
	if d.blocks {
		return inBlock(&d.intBlock, v)
	}
	return &v
}

func (d *rowDecoder) optIntN() *int {
	if !d.bool() {
		return nil
	}
	v := int(d.int())
	return &v
}

func (d *rowDecoder) optTime() *time.Time {
	if !d.bool() {
		return nil
	}
	t := d.time()
	if d.blocks {
		return inBlock(&d.timeBlock, t)
	}
	return &t
}

func (d *rowDecoder) pos() events.Position {
	return events.Position{Commit: d.uint(), Prepare: d.uint()}
}

// count reads a length and checks that at least that many bytes remain
// (every element takes one at least), so a damaged length cannot ask for
// a huge allocation.
func (d *rowDecoder) count() int {
	n := d.uint()
	if d.err == nil && n > uint64(len(d.buf)-d.off) {
		d.fail()
	}
	if d.err != nil {
		return 0
	}
	return int(n)
}

func (d *rowDecoder) strs() []string {
	n := d.count()
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

// rowCodec is the binary form of one row type.
type rowCodec[T any] struct {
	put func(e *rowEncoder, r *T)
	get func(d *rowDecoder, r *T)
	// views: the decoded rows' texts and byte slices view the section's
	// bytes (which nothing writes again) instead of being copied out of
	// them, one allocation per field; blocks: their optional fields
	// point into blocks shared by the section's rows. Either way a row
	// kept whole keeps its section (or block) alive: set for the tables
	// the in-memory store packs into rows of its own on a restore (see
	// Image), where the decoded rows are garbage once restored.
	views, blocks bool
}

// appendUntil appends rows to e without their count, one at a time until
// e holds limit bytes or more or every row is appended; it returns how
// many rows it appended. A snapshot write passes one encoder for all its
// sections (a new one per call is an allocation: put may keep it).
func (c rowCodec[T]) appendUntil(e *rowEncoder, rows []T, limit int) int {
	for i := range rows {
		if len(e.buf) >= limit {
			return i
		}
		c.put(e, &rows[i])
	}
	return len(rows)
}

// decodeRows reads a section (the row count, then the rows, as a write
// makes it); every byte must be used.
func (c rowCodec[T]) decodeRows(body []byte) ([]T, error) {
	d := &rowDecoder{buf: body}
	n := d.count()
	if d.err != nil {
		return nil, d.err
	}
	rows := make([]T, n)
	if err := c.decodeRowsInto(body, rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// decodeRowsInto reads a section into the first of rows, which must hold
// at least its rows; every byte must be used.
func (c rowCodec[T]) decodeRowsInto(body []byte, rows []T) error {
	d := &rowDecoder{buf: body, views: c.views, blocks: c.blocks}
	n := d.count()
	if d.err == nil && n > len(rows) {
		d.err = fmt.Errorf("%w: %d rows where %d have room", errCodec, n, len(rows))
	}
	for i := 0; i < n && d.err == nil; i++ {
		c.get(d, &rows[i])
	}
	if d.err == nil && d.off != len(d.buf) {
		d.err = fmt.Errorf("%w: %d bytes after the last row", errCodec, len(d.buf)-d.off)
	}
	return d.err
}

var userCodec = rowCodec[projections.User]{
	put: func(e *rowEncoder, r *projections.User) {
		e.int(r.AppID)
		e.int(r.OpenUserID)
		e.str(r.ChannelUserID)
		e.str(r.Name)
		e.optStr(r.Nickname)
		e.str(r.Gender)
		e.optStr(r.Avatar)
		e.optStr(r.Phone)
		e.optStr(r.Email)
		e.optStr(r.BirthDate)
		e.str(r.Status)
		e.time(r.RegisteredAt)
		e.time(r.UpdatedAt)
	},
	get: func(d *rowDecoder, r *projections.User) {
		r.AppID = d.int()
		r.OpenUserID = d.int()
		r.ChannelUserID = d.str()
		r.Name = d.str()
		r.Nickname = d.optStr()
		r.Gender = d.short()
		r.Avatar = d.optStr()
		r.Phone = d.optStr()
		r.Email = d.optStr()
		r.BirthDate = d.optStr()
		r.Status = d.short()
		r.RegisteredAt = d.time()
		r.UpdatedAt = d.time()
	},
	views: true, blocks: true,
}

var groupCodec = rowCodec[projections.Group]{
	put: func(e *rowEncoder, r *projections.Group) {
		e.int(r.AppID)
		e.int(r.OpenUserID)
		e.int(r.FamilyGroupID)
		e.int(r.AppGroupID)
		e.str(r.Name)
		e.bool(r.Dissolved)
		e.int(int64(r.MemberCount))
		e.time(r.CreatedAt)
		e.time(r.UpdatedAt)
	},
	get: func(d *rowDecoder, r *projections.Group) {
		r.AppID = d.int()
		r.OpenUserID = d.int()
		r.FamilyGroupID = d.int()
		r.AppGroupID = d.int()
		r.Name = d.str()
		r.Dissolved = d.bool()
		r.MemberCount = int(d.int())
		r.CreatedAt = d.time()
		r.UpdatedAt = d.time()
	},
}

var memberCodec = rowCodec[projections.Member]{
	put: func(e *rowEncoder, r *projections.Member) {
		e.int(r.AppID)
		e.int(r.OpenUserID)
		e.int(r.MemberID)
		e.str(r.AppUserID)
		e.int(r.AppGroupID)
		e.int(r.FamilyGroupID)
		e.str(r.Name)
		e.str(r.Relationship)
		e.optStr(r.Gender)
		e.optStr(r.BirthDate)
		e.optStr(r.Phone)
		e.optStr(r.IDType)
		e.optStr(r.IDNumber)
		e.optInt(r.Height)
		e.optInt(r.Weight)
		e.optStr(r.BloodType)
		e.bool(r.IsDefault)
		e.bool(r.Deleted)
		e.optTime(r.DeletedAt)
		e.time(r.UpdatedAt)
	},
	get: func(d *rowDecoder, r *projections.Member) {
		r.AppID = d.int()
		r.OpenUserID = d.int()
		r.MemberID = d.int()
		r.AppUserID = d.str()
		r.AppGroupID = d.int()
		r.FamilyGroupID = d.int()
		r.Name = d.str()
		r.Relationship = d.short()
		r.Gender = d.optShort()
		r.BirthDate = d.optStr()
		r.Phone = d.optStr()
		r.IDType = d.optShort()
		r.IDNumber = d.optStr()
		r.Height = d.optInt()
		r.Weight = d.optInt()
		r.BloodType = d.optShort()
		r.IsDefault = d.bool()
		r.Deleted = d.bool()
		r.DeletedAt = d.optTime()
		r.UpdatedAt = d.time()
	},
	views: true, blocks: true,
}

var deliveryCodec = rowCodec[projections.Delivery]{
	put: func(e *rowEncoder, r *projections.Delivery) {
		e.str(r.DeliveryID)
		e.int(r.AppID)
		e.int(r.EndpointID)
		e.str(r.EventType)
		e.str(r.SourceEventID)
		e.pos(r.SourcePosition)
		e.pos(r.Cursor)
		e.bytes(r.Body)
		e.str(r.Subject)
		e.str(r.Status)
		e.int(int64(r.Attempts))
		e.optTime(r.NextAttemptAt)
		e.optIntN(r.LastStatus)
		e.optStr(r.LastError)
		e.optStr(r.LastErrorClass)
		e.time(r.CreatedAt)
		e.time(r.UpdatedAt)
	},
	get: func(d *rowDecoder, r *projections.Delivery) {
		r.DeliveryID = d.str()
		r.AppID = d.int()
		r.EndpointID = d.int()
		r.EventType = d.short()
		r.SourceEventID = d.str()
		r.SourcePosition = d.pos()
		r.Cursor = d.pos()
		r.Body = d.bytes()
		r.Subject = d.str()
		r.Status = d.short()
		r.Attempts = int(d.int())
		r.NextAttemptAt = d.optTime()
		r.LastStatus = d.optIntN()
		r.LastError = d.optStr()
		r.LastErrorClass = d.optShort()
		r.CreatedAt = d.time()
		r.UpdatedAt = d.time()
	},
	views: true,
}

var attemptCodec = rowCodec[projections.Attempt]{
	put: func(e *rowEncoder, r *projections.Attempt) {
		e.str(r.DeliveryID)
		e.int(int64(r.Attempt))
		e.time(r.At)
		e.optIntN(r.StatusCode)
		e.int(r.LatencyMS)
		e.optStr(r.Error)
		e.optStr(r.ErrorClass)
		e.str(r.Outcome)
		e.str(r.ResponseExcerpt)
	},
	get: func(d *rowDecoder, r *projections.Attempt) {
		r.DeliveryID = d.str()
		r.Attempt = int(d.int())
		r.At = d.time()
		r.StatusCode = d.optIntN()
		r.LatencyMS = d.int()
		r.Error = d.optStr()
		r.ErrorClass = d.optShort()
		r.Outcome = d.short()
		r.ResponseExcerpt = d.str()
	},
}

var reportCodec = rowCodec[projections.Report]{
	put: func(e *rowEncoder, r *projections.Report) {
		e.int(r.ReportID)
		e.int(r.AppID)
		e.int(r.OpenUserID)
		e.optInt(r.OpenMemberID)
		e.optStr(r.RequestReportID)
		e.optStr(r.MeasurementNo)
		e.optStr(r.DeviceSN)
		e.optStr(r.ReportType)
		e.optStr(r.FilePath)
		e.optStr(r.InterpretationResult)
		e.bytes(r.InterpretationDetail)
		e.optStr(r.InterpretationMethod)
		e.bool(r.IsViewed)
		e.time(r.UploadedAt)
		e.optTime(r.ExaminedAt)
		e.optTime(r.InterpretedAt)
		e.optStr(r.PointsCode)
		e.optStr(r.DataSource)
		e.optStr(r.OperatorName)
		e.optInt(r.OperatorPlatformUserID)
		e.bytes(r.RawData)
		e.str(r.Day)
		e.time(r.UpdatedAt)
	},
	get: func(d *rowDecoder, r *projections.Report) {
		r.ReportID = d.int()
		r.AppID = d.int()
		r.OpenUserID = d.int()
		r.OpenMemberID = d.optInt()
		r.RequestReportID = d.optStr()
		r.MeasurementNo = d.optStr()
		r.DeviceSN = d.optStr()
		r.ReportType = d.optShort()
		r.FilePath = d.optStr()
		r.InterpretationResult = d.optStr()
		r.InterpretationDetail = d.bytes()
		r.InterpretationMethod = d.optShort()
		r.IsViewed = d.bool()
		r.UploadedAt = d.time()
		r.ExaminedAt = d.optTime()
		r.InterpretedAt = d.optTime()
		r.PointsCode = d.optShort()
		r.DataSource = d.optShort()
		r.OperatorName = d.optStr()
		r.OperatorPlatformUserID = d.optInt()
		r.RawData = d.bytes()
		r.Day = d.short()
		r.UpdatedAt = d.time()
	},
}

var goodsCodec = rowCodec[projections.Goods]{
	put: func(e *rowEncoder, r *projections.Goods) {
		e.int(r.GoodsID)
		e.str(r.GoodsCode)
		e.str(r.GoodsName)
		e.bool(r.Active)
		e.time(r.CreatedAt)
		e.time(r.UpdatedAt)
	},
	get: func(d *rowDecoder, r *projections.Goods) {
		r.GoodsID = d.int()
		r.GoodsCode = d.str()
		r.GoodsName = d.str()
		r.Active = d.bool()
		r.CreatedAt = d.time()
		r.UpdatedAt = d.time()
	},
}

var orderCodec = rowCodec[projections.Order]{
	put: func(e *rowEncoder, r *projections.Order) {
		e.int(r.OrderID)
		e.str(r.OrderCode)
		e.int(r.AppID)
		e.str(r.ThirdOrderID)
		e.optInt(r.UserID)
		e.str(r.ContactPerson)
		e.str(r.ContactPhone)
		e.str(r.Address)
		e.optStr(r.AreaCode)
		e.optStr(r.AreaText)
		e.str(r.LogisticsType)
		e.str(r.PostagePolicy)
		e.int(r.PostageAmount)
		e.str(r.Status)
		e.str(r.OrderSource)
		e.str(r.CooperationType)
		e.time(r.OrderTime)
		e.optStr(r.RejectReason)
		e.optStr(r.LogisticsCompany)
		e.optStr(r.TrackingNumber)
		e.optTime(r.ShippedAt)
		e.time(r.CreatedAt)
		e.time(r.UpdatedAt)
		e.uint(uint64(len(r.Items)))
		for i := range r.Items {
			it := &r.Items[i]
			e.int(it.ItemID)
			e.int(it.GoodsID)
			e.str(it.GoodsCode)
			e.str(it.GoodsName)
			e.int(it.Quantity)
			e.int(it.UnitPrice)
			e.int(it.TotalPrice)
			e.str(it.ShippingStatus)
			e.strs(it.DeviceSNs)
		}
	},
	get: func(d *rowDecoder, r *projections.Order) {
		r.OrderID = d.int()
		r.OrderCode = d.str()
		r.AppID = d.int()
		r.ThirdOrderID = d.str()
		r.UserID = d.optInt()
		r.ContactPerson = d.str()
		r.ContactPhone = d.str()
		r.Address = d.str()
		r.AreaCode = d.optStr()
		r.AreaText = d.optStr()
		r.LogisticsType = d.short()
		r.PostagePolicy = d.short()
		r.PostageAmount = d.int()
		r.Status = d.short()
		r.OrderSource = d.short()
		r.CooperationType = d.short()
		r.OrderTime = d.time()
		r.RejectReason = d.optStr()
		r.LogisticsCompany = d.optStr()
		r.TrackingNumber = d.optStr()
		r.ShippedAt = d.optTime()
		r.CreatedAt = d.time()
		r.UpdatedAt = d.time()
		if n := d.count(); n > 0 {
			r.Items = make([]projections.OrderItem, n)
			for i := range r.Items {
				it := &r.Items[i]
				it.ItemID = d.int()
				it.GoodsID = d.int()
				it.GoodsCode = d.str()
				it.GoodsName = d.str()
				it.Quantity = d.int()
				it.UnitPrice = d.int()
				it.TotalPrice = d.int()
				it.ShippingStatus = d.short()
				it.DeviceSNs = d.strs()
			}
		}
	},
}

var benefitItemCodec = rowCodec[projections.BenefitItem]{
	put: func(e *rowEncoder, r *projections.BenefitItem) {
		e.int(r.BenefitItemID)
		e.str(r.Name)
		e.str(r.Status)
		e.time(r.CreatedAt)
		e.time(r.UpdatedAt)
	},
	get: func(d *rowDecoder, r *projections.BenefitItem) {
		r.BenefitItemID = d.int()
		r.Name = d.str()
		r.Status = d.short()
		r.CreatedAt = d.time()
		r.UpdatedAt = d.time()
	},
}

var providerCodec = rowCodec[projections.ServiceProvider]{
	put: func(e *rowEncoder, r *projections.ServiceProvider) {
		e.int(r.ProviderID)
		e.int(r.AppID)
		e.str(r.Name)
		e.str(r.Type)
		e.str(r.Contact)
		e.optStr(r.PointsCode)
		e.str(r.Status)
		e.uint(uint64(len(r.AllowedItemIDs)))
		for _, id := range r.AllowedItemIDs {
			e.int(id)
		}
		e.int(r.DeveloperID)
		e.str(r.ReviewNotes)
		e.time(r.CreatedAt)
		e.time(r.UpdatedAt)
	},
	get: func(d *rowDecoder, r *projections.ServiceProvider) {
		r.ProviderID = d.int()
		r.AppID = d.int()
		r.Name = d.str()
		r.Type = d.short()
		r.Contact = d.str()
		r.PointsCode = d.optStr()
		r.Status = d.short()
		if n := d.count(); n > 0 {
			r.AllowedItemIDs = make([]int64, n)
			for i := range r.AllowedItemIDs {
				r.AllowedItemIDs[i] = d.int()
			}
		}
		r.DeveloperID = d.int()
		r.ReviewNotes = d.str()
		r.CreatedAt = d.time()
		r.UpdatedAt = d.time()
	},
}

var cardCodec = rowCodec[projections.Card]{
	put: func(e *rowEncoder, r *projections.Card) {
		e.str(r.CardNumber)
		e.int(r.IssuerAppID)
		e.str(r.HolderName)
		e.optStr(r.HolderPhone)
		e.time(r.ExpiresAt)
		e.uint(uint64(len(r.Items)))
		for _, it := range r.Items {
			e.int(it.UserBenefitItemID)
			e.int(it.BenefitItemID)
			e.int(it.Total)
			e.int(it.Remaining)
		}
		e.time(r.CreatedAt)
		e.time(r.UpdatedAt)
	},
	get: func(d *rowDecoder, r *projections.Card) {
		r.CardNumber = d.str()
		r.IssuerAppID = d.int()
		r.HolderName = d.str()
		r.HolderPhone = d.optStr()
		r.ExpiresAt = d.time()
		if n := d.count(); n > 0 {
			r.Items = make([]projections.CardItem, n)
			for i := range r.Items {
				r.Items[i] = projections.CardItem{UserBenefitItemID: d.int(), BenefitItemID: d.int(), Total: d.int(), Remaining: d.int()}
			}
		}
		r.CreatedAt = d.time()
		r.UpdatedAt = d.time()
	},
}

var fulfillmentCodec = rowCodec[projections.Fulfillment]{
	put: func(e *rowEncoder, r *projections.Fulfillment) {
		e.int(r.RecordID)
		e.str(r.CardNumber)
		e.int(r.IssuerAppID)
		e.int(r.UserBenefitItemID)
		e.int(r.BenefitItemID)
		e.str(r.BenefitItemName)
		e.int(r.ProviderID)
		e.int(r.ProviderAppID)
		e.int(r.Quantity)
		e.str(r.Status)
		e.optStr(r.PointsCode)
		e.optStr(r.Remark)
		e.time(r.InitiatedAt)
		e.optIntN(r.Rating)
		e.time(r.UpdatedAt)
	},
	get: func(d *rowDecoder, r *projections.Fulfillment) {
		r.RecordID = d.int()
		r.CardNumber = d.str()
		r.IssuerAppID = d.int()
		r.UserBenefitItemID = d.int()
		r.BenefitItemID = d.int()
		r.BenefitItemName = d.short()
		r.ProviderID = d.int()
		r.ProviderAppID = d.int()
		r.Quantity = d.int()
		r.Status = d.short()
		r.PointsCode = d.optShort()
		r.Remark = d.optStr()
		r.InitiatedAt = d.time()
		r.Rating = d.optIntN()
		r.UpdatedAt = d.time()
	},
}

var auditFactCodec = rowCodec[projections.AuditFact]{
	put: func(e *rowEncoder, r *projections.AuditFact) {
		e.int(r.Seq)
		e.str(r.EventID)
		e.str(r.Actor)
		e.str(r.Action)
		e.strs(r.Subjects)
		e.strs(r.EventIDs)
		e.int(r.ReportID)
		e.int(r.AppID)
		e.str(r.Reason)
		e.time(r.At)
	},
	get: func(d *rowDecoder, r *projections.AuditFact) {
		r.Seq = d.int()
		r.EventID = d.str()
		r.Actor = d.short()
		r.Action = d.short()
		r.Subjects = d.strs()
		r.EventIDs = d.strs()
		r.ReportID = d.int()
		r.AppID = d.int()
		r.Reason = d.str()
		r.At = d.time()
	},
}

package memory

import (
	"strings"
	"time"
	"unsafe"

	"github.com/healthtech/partner-open-platform/projections"
)

// The users read model's rows, as its tables (idTable) keep them: times
// as microseconds (UTC, as normTime leaves them), and every text of a row
// in one string, each text its length (a uvarint) and its bytes in the
// row's order, an optional text that is absent (nil) written empty and
// told apart by a bit of the row's has. A row of projections' types keeps
// each text in an allocation of its own and each optional one behind a
// pointer to a string header of its own; here a row is one allocation
// besides its fixed part, which holds no other pointer for the collector
// to follow. A read makes the row of projections' type again: its texts
// share the row's string, and each optional one is a pointer of its own,
// as a copy of a row handed out by a read must be.

// userRow is a user; text holds ChannelUserID, Name, Gender, Status and,
// when has says so, Nickname, Avatar, Phone, Email and BirthDate.
type userRow struct {
	appID, id           int64
	registered, updated int64 // UnixMicro, UTC
	text                string
	has                 uint8
}

// groupRow is a family group.
type groupRow struct {
	appID, userID, id, appGroupID int64
	created, updated              int64 // UnixMicro, UTC
	name                          string
	dissolved                     bool
}

// memberRow is a family member; text holds AppUserID, Name, Relationship
// and, when has says so, Gender, BirthDate, Phone, IDType, IDNumber and
// BloodType.
type memberRow struct {
	appID, userID, id, appGroupID, groupID int64
	updated, deletedAt                     int64 // UnixMicro, UTC; deletedAt when has&memberDeletedAt
	height, weight                         int64 // when has says so
	text                                   string
	has                                    uint16
}

// The member row's has: its optional texts are bits 0-5, in text's order.
const (
	memberHeight uint16 = 1 << (6 + iota)
	memberWeight
	memberDeletedAt
	memberDefault
	memberDeleted
)

// rowText packs a row's texts into one string; an optional text adds its
// bit to has (bit i for opt[i]) when it is there.
type rowText struct {
	all [13]string
	n   int
	has uint16
}

func (t *rowText) add(s string) { t.all[t.n] = s; t.n++ }

// addBytes adds b without a copy of its own: String copies every text.
func (t *rowText) addBytes(b []byte) { t.add(unsafe.String(unsafe.SliceData(b), len(b))) }

func (t *rowText) opt(bit int, p *string) {
	if p != nil {
		t.has |= 1 << bit
		t.add(*p)
	} else {
		t.add("")
	}
}

func (t *rowText) String() string {
	size := 0
	for _, s := range t.all[:t.n] {
		size += uvarintLen(len(s)) + len(s)
	}
	var b strings.Builder
	b.Grow(size)
	for _, s := range t.all[:t.n] {
		for n := uint(len(s)); ; n >>= 7 {
			if n < 0x80 {
				b.WriteByte(byte(n))
				break
			}
			b.WriteByte(byte(n) | 0x80)
		}
		b.WriteString(s)
	}
	return b.String()
}

func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

// textReader reads a row's texts in their order, each a substring of the
// row's string.
type textReader string

func (r *textReader) next() string {
	s := string(*r)
	if n := int(s[0]); n < 0x80 { // most texts are shorter than 128 bytes
		*r = textReader(s[1+n:])
		return s[1 : 1+n]
	}
	n, shift, i := 0, 0, 0
	for ; ; i++ {
		b := s[i]
		n |= int(b&0x7f) << shift
		if b < 0x80 {
			break
		}
		shift += 7
	}
	v := s[i+1 : i+1+n]
	*r = textReader(s[i+1+n:])
	return v
}

// opt is the next text, nil when has lacks bit.
func (r *textReader) opt(has uint16, bit int, a *ptrArena) *string {
	v := r.next()
	if has&(1<<bit) == 0 {
		return nil
	}
	return a.str(v)
}

// ptrArena holds the values a paged image's rows point to (their optional
// fields), reused by every page as the page's rows are: a snapshot write
// would otherwise allocate a pointer for each optional field of every
// row. A nil arena allocates each, for rows handed out by reads.
type ptrArena struct {
	strs  []string
	ints  []int64
	times []time.Time
	json  []byte
}

// reset starts a page: the last page's rows were written out already.
func (a *ptrArena) reset() {
	a.strs, a.ints, a.times, a.json = a.strs[:0], a.ints[:0], a.times[:0], a.json[:0]
}

func (a *ptrArena) str(v string) *string {
	if a == nil {
		p := new(string)
		*p = v
		return p
	}
	return arenaPtr(&a.strs, v)
}

func (a *ptrArena) int(v int64) *int64 {
	if a == nil {
		p := new(int64)
		*p = v
		return p
	}
	return arenaPtr(&a.ints, v)
}

func (a *ptrArena) time(v time.Time) *time.Time {
	if a == nil {
		p := new(time.Time)
		*p = v
		return p
	}
	return arenaPtr(&a.times, v)
}

// bytes is v as JSON bytes, nil when empty (JSON null).
func (a *ptrArena) bytes(v string) []byte {
	if len(v) == 0 {
		return nil
	}
	if a == nil {
		return []byte(v)
	}
	if cap(a.json)-len(a.json) < len(v) {
		// A full buffer is replaced, not grown, as in arenaPtr.
		a.json = make([]byte, 0, max(2*cap(a.json), 4096, len(v)))
	}
	n := len(a.json)
	a.json = append(a.json, v...)
	return a.json[n:len(a.json):len(a.json)]
}

// arenaPtr puts v in s and points to it; a full s is replaced by a larger
// one, not grown, so the pointers handed out before stay where they are.
func arenaPtr[T any](s *[]T, v T) *T {
	if len(*s) == cap(*s) {
		*s = make([]T, 0, max(2*cap(*s), 256))
	}
	*s = append(*s, v)
	return &(*s)[len(*s)-1]
}

func (r userRow) rowID() int64   { return r.id }
func (r groupRow) rowID() int64  { return r.id }
func (r memberRow) rowID() int64 { return r.id }

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

func packUser(u projections.User) userRow {
	var t rowText
	t.add(u.ChannelUserID)
	t.add(u.Name)
	t.add(u.Gender)
	t.add(u.Status)
	t.opt(0, u.Nickname)
	t.opt(1, u.Avatar)
	t.opt(2, u.Phone)
	t.opt(3, u.Email)
	t.opt(4, u.BirthDate)
	return userRow{appID: u.AppID, id: u.OpenUserID, registered: micros(u.RegisteredAt), updated: micros(u.UpdatedAt),
		text: t.String(), has: uint8(t.has)}
}

// user is the row as projections' type, its optional fields in a (nil:
// allocated).
func (r userRow) user(a *ptrArena) projections.User {
	t := textReader(r.text)
	u := projections.User{AppID: r.appID, OpenUserID: r.id,
		RegisteredAt: fromMicros(r.registered), UpdatedAt: fromMicros(r.updated)}
	u.ChannelUserID, u.Name, u.Gender, u.Status = t.next(), t.next(), t.next(), t.next()
	has := uint16(r.has)
	u.Nickname, u.Avatar, u.Phone = t.opt(has, 0, a), t.opt(has, 1, a), t.opt(has, 2, a)
	u.Email, u.BirthDate = t.opt(has, 3, a), t.opt(has, 4, a)
	return u
}

// channel is the user's ChannelUserID, without making the row.
func (r *userRow) channel() string {
	t := textReader(r.text)
	return t.next()
}

// phone is the user's Phone, without making the row.
func (r *userRow) phone() (string, bool) {
	t := textReader(r.text)
	for range 6 {
		t.next()
	}
	return t.next(), r.has&(1<<2) != 0
}

func packGroup(g projections.Group) groupRow {
	return groupRow{appID: g.AppID, userID: g.OpenUserID, id: g.FamilyGroupID, appGroupID: g.AppGroupID,
		created: micros(g.CreatedAt), updated: micros(g.UpdatedAt), name: g.Name, dissolved: g.Dissolved}
}

// view is group for a paged image (rowsByID), which has no pointer to
// keep.
func (r groupRow) view(*ptrArena) projections.Group { return r.group() }

// group is the group without its MemberCount, which reads fill in.
func (r *groupRow) group() projections.Group {
	return projections.Group{AppID: r.appID, OpenUserID: r.userID, FamilyGroupID: r.id, AppGroupID: r.appGroupID,
		Name: r.name, Dissolved: r.dissolved, CreatedAt: fromMicros(r.created), UpdatedAt: fromMicros(r.updated)}
}

func packMember(m projections.Member) memberRow {
	var t rowText
	t.add(m.AppUserID)
	t.add(m.Name)
	t.add(m.Relationship)
	t.opt(0, m.Gender)
	t.opt(1, m.BirthDate)
	t.opt(2, m.Phone)
	t.opt(3, m.IDType)
	t.opt(4, m.IDNumber)
	t.opt(5, m.BloodType)
	r := memberRow{appID: m.AppID, userID: m.OpenUserID, id: m.MemberID, appGroupID: m.AppGroupID, groupID: m.FamilyGroupID,
		updated: micros(m.UpdatedAt), text: t.String(), has: t.has}
	if m.Height != nil {
		r.height, r.has = *m.Height, r.has|memberHeight
	}
	if m.Weight != nil {
		r.weight, r.has = *m.Weight, r.has|memberWeight
	}
	if m.DeletedAt != nil {
		r.deletedAt, r.has = micros(*m.DeletedAt), r.has|memberDeletedAt
	}
	if m.IsDefault {
		r.has |= memberDefault
	}
	if m.Deleted {
		r.has |= memberDeleted
	}
	return r
}

// member is the row as projections' type, its optional fields in a (nil:
// allocated).
func (r memberRow) member(a *ptrArena) projections.Member {
	t := textReader(r.text)
	m := projections.Member{AppID: r.appID, OpenUserID: r.userID, MemberID: r.id, AppGroupID: r.appGroupID,
		FamilyGroupID: r.groupID, UpdatedAt: fromMicros(r.updated),
		IsDefault: r.has&memberDefault != 0, Deleted: r.deleted()}
	m.AppUserID, m.Name, m.Relationship = t.next(), t.next(), t.next()
	m.Gender, m.BirthDate, m.Phone = t.opt(r.has, 0, a), t.opt(r.has, 1, a), t.opt(r.has, 2, a)
	m.IDType, m.IDNumber, m.BloodType = t.opt(r.has, 3, a), t.opt(r.has, 4, a), t.opt(r.has, 5, a)
	if r.has&memberHeight != 0 {
		m.Height = a.int(r.height)
	}
	if r.has&memberWeight != 0 {
		m.Weight = a.int(r.weight)
	}
	if r.has&memberDeletedAt != 0 {
		m.DeletedAt = a.time(fromMicros(r.deletedAt))
	}
	return m
}

func (r *memberRow) deleted() bool { return r.has&memberDeleted != 0 }

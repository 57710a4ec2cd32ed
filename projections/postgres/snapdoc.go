package postgres

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/healthtech/partner-open-platform/projections"
)

// docScanner reads a user_snapshots document (user_snapshot_docs writes
// it) without reflection: the read's JSON decoding was a fifth of the
// snapshot handler's CPU with encoding/json. It scans one string holding the whole document, so the
// document's strings are substrings of that one allocation. It accepts any
// JSON (keys in any order, whitespace, unknown keys skipped) and decodes
// values as encoding/json decoded them into snapshotDoc: null into a
// string or a number is its zero value, into a pointer nil.
type docScanner struct {
	s   string
	i   int
	err error
}

func (d *docScanner) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("at offset %d: %s", d.i, what)
	}
}

func (d *docScanner) ws() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte (0 at the end or after an error).
func (d *docScanner) peek() byte {
	d.ws()
	if d.err != nil || d.i >= len(d.s) {
		return 0
	}
	return d.s[d.i]
}

func (d *docScanner) literal(word string) {
	if strings.HasPrefix(d.s[d.i:], word) {
		d.i += len(word)
		return
	}
	d.fail("expected " + word)
}

// null consumes a null if one comes next.
func (d *docScanner) null() bool {
	if d.peek() == 'n' {
		d.literal("null")
		return true
	}
	return false
}

// str reads a string; one with escapes is decoded by encoding/json.
func (d *docScanner) str() string {
	if d.null() {
		return ""
	}
	if d.peek() != '"' {
		d.fail("expected a string")
		return ""
	}
	start := d.i
	escaped := false
	for j := start + 1; j < len(d.s); j++ {
		switch d.s[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			d.i = j + 1
			if !escaped {
				return d.s[start+1 : j]
			}
			var v string
			if err := json.Unmarshal([]byte(d.s[start:d.i]), &v); err != nil {
				d.fail(err.Error())
			}
			return v
		}
	}
	d.fail("unterminated string")
	return ""
}

func (d *docScanner) optStr() *string {
	if d.null() {
		return nil
	}
	v := d.str()
	return &v
}

func (d *docScanner) int() int64 {
	if d.null() {
		return 0
	}
	d.ws()
	start := d.i
	for d.i < len(d.s) && (d.s[d.i] == '-' || d.s[d.i] == '+' || d.s[d.i] == '.' || d.s[d.i] == 'e' || d.s[d.i] == 'E' || d.s[d.i] >= '0' && d.s[d.i] <= '9') {
		d.i++
	}
	v, err := strconv.ParseInt(d.s[start:d.i], 10, 64)
	if err != nil {
		d.i = start
		d.fail("expected an integer")
	}
	return v
}

func (d *docScanner) optInt() *int64 {
	if d.null() {
		return nil
	}
	v := d.int()
	return &v
}

func (d *docScanner) boolean() bool {
	switch d.peek() {
	case 't':
		d.literal("true")
		return true
	case 'f':
		d.literal("false")
	case 'n':
		d.literal("null")
	default:
		d.fail("expected a boolean")
	}
	return false
}

// object calls field for each key; field must consume the key's value.
// A null object has no keys.
func (d *docScanner) object(field func(key string)) {
	if d.null() {
		return
	}
	if d.peek() != '{' {
		d.fail("expected an object")
		return
	}
	d.i++
	if d.peek() == '}' {
		d.i++
		return
	}
	for d.err == nil {
		key := d.str()
		if d.peek() != ':' {
			d.fail("expected a colon")
			return
		}
		d.i++
		field(key)
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return
		default:
			d.fail("expected , or }")
		}
	}
}

// array calls elem for each element; elem must consume it. A null array
// has no elements.
func (d *docScanner) array(elem func()) {
	if d.null() {
		return
	}
	if d.peek() != '[' {
		d.fail("expected an array")
		return
	}
	d.i++
	if d.peek() == ']' {
		d.i++
		return
	}
	for d.err == nil {
		elem()
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return
		default:
			d.fail("expected , or ]")
		}
	}
}

// skip consumes any one value (a key this reader does not know).
func (d *docScanner) skip() {
	switch d.peek() {
	case '{':
		d.object(func(string) { d.skip() })
	case '[':
		d.array(d.skip)
	case '"':
		d.str()
	case 't', 'f':
		d.boolean()
	case 'n':
		d.literal("null")
	default:
		start := d.i
		for d.i < len(d.s) && strings.IndexByte("+-.eE0123456789", d.s[d.i]) >= 0 {
			d.i++
		}
		if d.i == start {
			d.fail("expected a value")
		}
	}
}

// decodeSnapshot fills snap from a document, keeping only the members
// updated strictly after q.UpdatedAfter when that is set (as Members does).
func decodeSnapshot(doc []byte, q projections.SnapshotQuery, openUserID int64, channelUserID string, snap *projections.Snapshot) error {
	d := &docScanner{s: string(doc)}
	snap.Found = true
	u := &snap.User
	// A time a document leaves out is the epoch, as decoding 0 made it.
	epoch := micro(0)
	*u = projections.User{AppID: q.AppID, OpenUserID: openUserID, ChannelUserID: channelUserID, RegisteredAt: epoch, UpdatedAt: epoch}
	snap.Groups = snap.Groups[:0]
	snap.Members = snap.Members[:0]
	if snap.Groups == nil {
		snap.Groups = []projections.Group{}
	}
	if snap.Members == nil {
		snap.Members = []projections.Member{}
	}
	d.object(func(key string) {
		switch key {
		case "u":
			d.object(func(key string) { userField(d, key, u) })
		case "g":
			d.array(func() {
				g := projections.Group{AppID: q.AppID, OpenUserID: openUserID, CreatedAt: epoch, UpdatedAt: epoch}
				d.object(func(key string) { groupField(d, key, &g) })
				snap.Groups = append(snap.Groups, g)
			})
		case "m":
			d.array(func() {
				m := projections.Member{AppID: q.AppID, OpenUserID: openUserID, UpdatedAt: epoch}
				d.object(func(key string) { memberField(d, key, &m) })
				if q.UpdatedAfter.IsZero() || m.UpdatedAt.After(q.UpdatedAfter) {
					snap.Members = append(snap.Members, m)
				}
			})
		default:
			d.skip()
		}
	})
	if d.err == nil && d.peek() != 0 {
		d.fail("data after the document")
	}
	if d.err != nil {
		return fmt.Errorf("decode the snapshot document: %w", d.err)
	}
	return nil
}

func userField(d *docScanner, key string, u *projections.User) {
	switch key {
	case "n":
		u.Name = d.str()
	case "k":
		u.Nickname = d.optStr()
	case "g":
		u.Gender = d.str()
	case "a":
		u.Avatar = d.optStr()
	case "p":
		u.Phone = d.optStr()
	case "e":
		u.Email = d.optStr()
	case "b":
		u.BirthDate = d.optStr()
	case "s":
		u.Status = d.str()
	case "r":
		u.RegisteredAt = micro(d.int())
	case "t":
		u.UpdatedAt = micro(d.int())
	default:
		d.skip()
	}
}

func groupField(d *docScanner, key string, g *projections.Group) {
	switch key {
	case "id":
		g.FamilyGroupID = d.int()
	case "ag":
		g.AppGroupID = d.int()
	case "n":
		g.Name = d.str()
	case "c":
		g.MemberCount = int(d.int())
	case "cr":
		g.CreatedAt = micro(d.int())
	case "t":
		g.UpdatedAt = micro(d.int())
	default:
		d.skip()
	}
}

func memberField(d *docScanner, key string, m *projections.Member) {
	switch key {
	case "id":
		m.MemberID = d.int()
	case "au":
		m.AppUserID = d.str()
	case "ag":
		m.AppGroupID = d.int()
	case "fg":
		m.FamilyGroupID = d.int()
	case "n":
		m.Name = d.str()
	case "r":
		m.Relationship = d.str()
	case "g":
		m.Gender = d.optStr()
	case "b":
		m.BirthDate = d.optStr()
	case "p":
		m.Phone = d.optStr()
	case "it":
		m.IDType = d.optStr()
	case "in":
		m.IDNumber = d.optStr()
	case "h":
		m.Height = d.optInt()
	case "w":
		m.Weight = d.optInt()
	case "bt":
		m.BloodType = d.optStr()
	case "d":
		m.IsDefault = d.boolean()
	case "t":
		m.UpdatedAt = micro(d.int())
	default:
		d.skip()
	}
}

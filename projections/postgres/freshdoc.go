package postgres

import (
	"context"
	"maps"
	"slices"
	"strconv"

	"github.com/healthtech/partner-open-platform/projections"
)

// A registered user's snapshot document, built here. The log registers a
// user once, as the first event of their stream (projections'
// userRegistrar), so when a transaction registers a user it holds every
// row the user has: the user, and the groups this transaction names for
// them. Their document is then encoded from those rows in Go and written
// as bytes, with the exact text user_snapshot_docs (migrations/snapshots)
// would build from them, instead of the refresh statement reading the
// rows back and building it in SQL (the largest part of a register's
// Postgres execution time). A registered user whose rows this
// transaction changes in a way not followed here (a group written whole,
// a member, a group or a user of another app than the user's) goes back
// to the refresh statement, as every other user does.

// freshUser is a user this transaction registered and every row they
// have: the user and their groups, as a read of them returns them.
type freshUser struct {
	user   projections.User
	groups []projections.Group // ascending family_group_id
}

// RegisterUser writes a newly registered user's row, as PutUser does, and
// keeps the user's rows to build their document from.
func (t *tx) RegisterUser(ctx context.Context, u projections.User) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	kept := t.writeUser(u)
	if t.fresh == nil {
		t.fresh = map[int64]*freshUser{}
	}
	t.fresh[u.OpenUserID] = &freshUser{user: kept}
	return nil
}

// touchUser marks a user's document for the refresh statement, and drops
// what this transaction kept to build it from: the user's rows are then
// written in a way only the refresh follows.
func (t *tx) touchUser(openUserID int64) {
	delete(t.fresh, openUserID)
	t.touchedUsers = append(t.touchedUsers, openUserID)
}

// nameGroup applies nameGroup's upsert to the kept groups: a new group as
// given, an existing one takes the name and updated_at.
func (f *freshUser) nameGroup(g projections.Group) {
	i, found := slices.BinarySearchFunc(f.groups, g.FamilyGroupID, func(h projections.Group, id int64) int {
		switch {
		case h.FamilyGroupID < id:
			return -1
		case h.FamilyGroupID > id:
			return 1
		}
		return 0
	})
	if found {
		f.groups[i].Name, f.groups[i].UpdatedAt = g.Name, dbTime(g.UpdatedAt)
		return
	}
	g.Dissolved, g.MemberCount = false, 0
	g.CreatedAt, g.UpdatedAt = dbTime(g.CreatedAt), dbTime(g.UpdatedAt)
	f.groups = slices.Insert(f.groups, i, g)
}

// upsertSnapshot writes a document built here; the refresh statement
// ends with its ON CONFLICT.
const upsertSnapshot = `
INSERT INTO user_snapshots AS s (open_user_id, app_id, channel_user_id, doc)
VALUES ($1, $2, $3, $4)
ON CONFLICT (open_user_id) DO UPDATE SET
    app_id = EXCLUDED.app_id,
    channel_user_id = EXCLUDED.channel_user_id,
    doc = EXCLUDED.doc`

// snapshotRows writes runs of documents built here (rows.go).
var snapshotRows = rowStmt{table: "user_snapshots", one: upsertSnapshot, many: unnestOf(upsertSnapshot,
	"bigint", "bigint", "text", "bytea")}

// writeFreshSnapshots queues the documents of the users this transaction
// registered, in id order.
func (t *tx) writeFreshSnapshots() {
	if len(t.fresh) == 0 {
		return
	}
	var buf []byte
	for _, id := range slices.Sorted(maps.Keys(t.fresh)) {
		f := t.fresh[id]
		start := len(buf)
		buf = appendSnapshotDoc(buf, f.user, f.groups)
		t.queueRow(&snapshotRows, id, id, f.user.AppID, f.user.ChannelUserID, buf[start:len(buf):len(buf)])
	}
	t.fresh = nil
}

// appendSnapshotDoc appends the document user_snapshot_docs builds for a
// user with these live groups (each with no live member) and no member:
// json_build_object's text ('{"k" : v, "k" : v}'), json_agg's (elements
// separated by ', '), and the view's own concatenation.
func appendSnapshotDoc(b []byte, u projections.User, groups []projections.Group) []byte {
	b = append(b, `{"u" : {"n" : `...)
	b = appendJSONText(b, u.Name)
	b = append(b, `, "k" : `...)
	b = appendJSONTextPtr(b, u.Nickname)
	b = append(b, `, "g" : `...)
	b = appendJSONText(b, u.Gender)
	b = append(b, `, "a" : `...)
	b = appendJSONTextPtr(b, u.Avatar)
	b = append(b, `, "p" : `...)
	b = appendJSONTextPtr(b, u.Phone)
	b = append(b, `, "e" : `...)
	b = appendJSONTextPtr(b, u.Email)
	b = append(b, `, "b" : `...)
	b = appendJSONTextPtr(b, u.BirthDate)
	b = append(b, `, "s" : `...)
	b = appendJSONText(b, u.Status)
	b = append(b, `, "r" : `...)
	b = strconv.AppendInt(b, u.RegisteredAt.UnixMicro(), 10)
	b = append(b, `, "t" : `...)
	b = strconv.AppendInt(b, u.UpdatedAt.UnixMicro(), 10)
	b = append(b, `}, "g" : `...)
	n := 0
	for _, g := range groups {
		if g.Dissolved {
			continue
		}
		if n == 0 {
			b = append(b, '[')
		} else {
			b = append(b, ", "...)
		}
		n++
		b = append(b, `{"id" : `...)
		b = strconv.AppendInt(b, g.FamilyGroupID, 10)
		b = append(b, `, "ag" : `...)
		b = strconv.AppendInt(b, g.AppGroupID, 10)
		b = append(b, `, "n" : `...)
		b = appendJSONText(b, g.Name)
		b = append(b, `, "c" : 0, "cr" : `...)
		b = strconv.AppendInt(b, g.CreatedAt.UnixMicro(), 10)
		b = append(b, `, "t" : `...)
		b = strconv.AppendInt(b, g.UpdatedAt.UnixMicro(), 10)
		b = append(b, '}')
	}
	if n == 0 {
		b = append(b, "[]"...)
	} else {
		b = append(b, ']')
	}
	return append(b, `, "m" : []}`...)
}

func appendJSONTextPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendJSONText(b, *s)
}

// appendJSONText appends s as Postgres's JSON functions write a text value
// (escape_json): a quote, a backslash and the control characters below
// 0x20 escaped (\b \f \n \r \t, the others as \u00xx in lower-case hex),
// every other byte as it is.
func appendJSONText(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}

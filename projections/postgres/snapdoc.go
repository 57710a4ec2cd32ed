package postgres

import (
	"errors"
	"fmt"
	"time"

	jc "github.com/healthtech/partner-open-platform/events/jsoncodec"
	"github.com/healthtech/partner-open-platform/projections"
)

// errSnapshotDoc is a user_snapshots document the reader cannot decode.
var errSnapshotDoc = errors.New("not a snapshot document")

// decodeSnapshot fills snap from a user_snapshots document
// (user_snapshot_docs writes it: short keys, times in microseconds since
// the epoch), keeping only the members updated strictly after
// q.UpdatedAfter when that is set (as Members does). The document is read
// without reflection (encoding/json's decoding was a fifth of the snapshot
// handler's CPU) as one string, so its strings are substrings of that one
// allocation. Keys come in any order and unknown ones are skipped; a null
// leaves a value as encoding/json left it in the struct it decoded before
// (zero, nil, or the epoch for a time).
func decodeSnapshot(doc []byte, q projections.SnapshotQuery, openUserID int64, channelUserID string, snap *projections.Snapshot) error {
	snap.Found = true
	u := &snap.User
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
	ok := jc.ReadObjectString(string(doc), func(key string, r *jc.Reader) bool {
		if r.Null() {
			return true
		}
		switch key {
		case "u":
			return r.Object(func(key string, r *jc.Reader) bool { return userField(r, key, u) })
		case "g":
			return r.Array(func(r *jc.Reader) bool {
				g := projections.Group{AppID: q.AppID, OpenUserID: openUserID, CreatedAt: epoch, UpdatedAt: epoch}
				if !r.Null() && !r.Object(func(key string, r *jc.Reader) bool { return groupField(r, key, &g) }) {
					return false
				}
				snap.Groups = append(snap.Groups, g)
				return true
			})
		case "m":
			return r.Array(func(r *jc.Reader) bool {
				m := projections.Member{AppID: q.AppID, OpenUserID: openUserID, UpdatedAt: epoch}
				if !r.Null() && !r.Object(func(key string, r *jc.Reader) bool { return memberField(r, key, &m) }) {
					return false
				}
				if q.UpdatedAfter.IsZero() || m.UpdatedAt.After(q.UpdatedAfter) {
					snap.Members = append(snap.Members, m)
				}
				return true
			})
		}
		return r.Skip()
	})
	if !ok {
		return fmt.Errorf("decode the snapshot document: %w", errSnapshotDoc)
	}
	return nil
}

// microTime reads a time written as microseconds since the epoch.
func microTime(r *jc.Reader, t *time.Time) bool {
	var n int64
	ok := r.Int(&n)
	*t = micro(n)
	return ok
}

func userField(r *jc.Reader, key string, u *projections.User) bool {
	if r.Null() {
		return true
	}
	switch key {
	case "n":
		return r.String(&u.Name)
	case "k":
		return r.StringPtr(&u.Nickname)
	case "g":
		return r.String(&u.Gender)
	case "a":
		return r.StringPtr(&u.Avatar)
	case "p":
		return r.StringPtr(&u.Phone)
	case "e":
		return r.StringPtr(&u.Email)
	case "b":
		return r.StringPtr(&u.BirthDate)
	case "s":
		return r.String(&u.Status)
	case "r":
		return microTime(r, &u.RegisteredAt)
	case "t":
		return microTime(r, &u.UpdatedAt)
	}
	return r.Skip()
}

func groupField(r *jc.Reader, key string, g *projections.Group) bool {
	if r.Null() {
		return true
	}
	switch key {
	case "id":
		return r.Int(&g.FamilyGroupID)
	case "ag":
		return r.Int(&g.AppGroupID)
	case "n":
		return r.String(&g.Name)
	case "c":
		return r.IntTo(&g.MemberCount)
	case "cr":
		return microTime(r, &g.CreatedAt)
	case "t":
		return microTime(r, &g.UpdatedAt)
	}
	return r.Skip()
}

func memberField(r *jc.Reader, key string, m *projections.Member) bool {
	if r.Null() {
		return true
	}
	switch key {
	case "id":
		return r.Int(&m.MemberID)
	case "au":
		return r.String(&m.AppUserID)
	case "ag":
		return r.Int(&m.AppGroupID)
	case "fg":
		return r.Int(&m.FamilyGroupID)
	case "n":
		return r.String(&m.Name)
	case "r":
		return r.String(&m.Relationship)
	case "g":
		return r.StringPtr(&m.Gender)
	case "b":
		return r.StringPtr(&m.BirthDate)
	case "p":
		return r.StringPtr(&m.Phone)
	case "it":
		return r.StringPtr(&m.IDType)
	case "in":
		return r.StringPtr(&m.IDNumber)
	case "h":
		return r.IntPtr(&m.Height)
	case "w":
		return r.IntPtr(&m.Weight)
	case "bt":
		return r.StringPtr(&m.BloodType)
	case "d":
		return r.Bool(&m.IsDefault)
	case "t":
		return microTime(r, &m.UpdatedAt)
	}
	return r.Skip()
}

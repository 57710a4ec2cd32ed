package queryapi

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/projections"
)

// snapshotBufs recycles the snapshot responses' buffers: the read is the
// platform's hottest route, and its answer is a few hundred bytes.
var snapshotBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// writeSnapshot answers a snapshot read with the bytes httpapi.OK writes
// for the spec's snapshot object (keys in alphabetical order as
// encoding/json writes struct fields declared so, nulls kept, HTML not
// escaped, a trailing newline), appended by hand: encoding/json's
// reflection, its encode state and httpapi's verbatim pass (a random token
// per response) took 15 of the read handler's 138 µs, this takes 10 with
// the write.
// TestSnapshotBytesAsEncodingJSON holds the bytes equal.
func (q *API) writeSnapshot(w http.ResponseWriter, u projections.User, groups []projections.Group, members []projections.Member) {
	bp := snapshotBufs.Get().(*[]byte)
	b := q.appendSnapshotEnvelope((*bp)[:0], u, groups, members, httpapi.Clock())
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
	if cap(b) <= 64<<10 {
		*bp = b
		snapshotBufs.Put(bp)
	}
}

// appendSnapshotEnvelope appends the success envelope around the snapshot
// object, as httpapi.OK encodes it at now.
func (q *API) appendSnapshotEnvelope(b []byte, u projections.User, groups []projections.Group, members []projections.Member, now time.Time) []byte {
	b = append(b, `{"success":true,"code":0,"message":"ok","data":`...)
	b = q.appendSnapshot(b, u, groups, members)
	b = append(b, `,"timestamp":"`...)
	b = now.AppendFormat(b, time.RFC3339)
	return append(b, "\"}\n"...)
}

// appendSnapshot appends the spec's snapshot object: family_groups,
// family_members, user, each with its fields in alphabetical order.
func (q *API) appendSnapshot(b []byte, u projections.User, groups []projections.Group, members []projections.Member) []byte {
	b = append(b, `{"family_groups":[`...)
	for i, g := range groups {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"app_group_id":`...)
		b = strconv.AppendInt(b, g.AppGroupID, 10)
		b = append(b, `,"family_group_id":`...)
		b = strconv.AppendInt(b, g.FamilyGroupID, 10)
		b = append(b, `,"member_count":`...)
		b = strconv.AppendInt(b, int64(g.MemberCount), 10)
		b = append(b, `,"name":`...)
		b = appendString(b, g.Name)
		b = append(b, '}')
	}
	b = append(b, `],"family_members":[`...)
	for i := range members {
		m := &members[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"app_group_id":`...)
		b = strconv.AppendInt(b, m.AppGroupID, 10)
		b = append(b, `,"app_user_id":`...)
		b = appendString(b, m.AppUserID)
		b = append(b, `,"birth_date":`...)
		b = appendOptString(b, m.BirthDate)
		b = append(b, `,"blood_type":`...)
		b = appendOptString(b, m.BloodType)
		b = append(b, `,"family_group_id":`...)
		b = strconv.AppendInt(b, m.FamilyGroupID, 10)
		b = append(b, `,"gender":`...)
		b = appendOptString(b, m.Gender)
		b = append(b, `,"height":`...)
		b = appendOptInt(b, m.Height)
		b = append(b, `,"id_type":`...)
		b = appendOptString(b, m.IDType)
		b = append(b, `,"is_default":`...)
		b = strconv.AppendBool(b, m.IsDefault)
		b = append(b, `,"member_id":`...)
		b = strconv.AppendInt(b, m.MemberID, 10)
		b = append(b, `,"name":`...)
		b = appendString(b, m.Name)
		b = append(b, `,"phone":`...)
		b = appendOptString(b, m.Phone)
		b = append(b, `,"relationship":`...)
		b = appendString(b, m.Relationship)
		b = append(b, `,"updated_at":"`...)
		b = m.UpdatedAt.In(q.Location).AppendFormat(b, DateTime)
		b = append(b, `","weight":`...)
		b = appendOptInt(b, m.Weight)
		b = append(b, '}')
	}
	b = append(b, `],"user":{"avatar":`...)
	b = appendOptString(b, u.Avatar)
	b = append(b, `,"birth_date":`...)
	b = appendOptString(b, u.BirthDate)
	b = append(b, `,"channel_user_id":`...)
	b = appendString(b, u.ChannelUserID)
	b = append(b, `,"email":`...)
	b = appendOptString(b, u.Email)
	b = append(b, `,"gender":`...)
	b = appendString(b, u.Gender)
	b = append(b, `,"name":`...)
	b = appendString(b, u.Name)
	b = append(b, `,"nickname":`...)
	b = appendOptString(b, u.Nickname)
	b = append(b, `,"open_user_id":`...)
	b = strconv.AppendInt(b, u.OpenUserID, 10)
	b = append(b, `,"phone":`...)
	if u.Phone != nil {
		b = appendString(b, httpapi.MaskPhone(*u.Phone))
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"registered_at":"`...)
	b = u.RegisteredAt.In(q.Location).AppendFormat(b, DateTime)
	b = append(b, `","status":`...)
	b = appendString(b, u.Status)
	return append(b, "}}"...)
}

func appendOptString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

func appendOptInt(b []byte, v *int64) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, *v, 10)
}

// appendString appends s as a JSON string exactly as encoding/json does
// with HTML escaping off (httpapi.WriteJSON), through the one writer the
// hand-written encoders share.
func appendString(b []byte, s string) []byte {
	return events.AppendJSONString(b, s, false)
}

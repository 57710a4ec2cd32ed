package memory

import (
	"cmp"
	"slices"
)

// The users read model's indexes are placeIndexes of its tables' places:
// users by channel id and by phone, groups by user, members by user and
// by group. Each reads only the rows of its own table, so the restore's
// lanes (users, groups, members) fill them concurrently. A group's live
// member count is counted from its members when read: a family holds a
// few.

// userByChannel is the user holding (app, channel), nil if none.
func (s *Store) userByChannel(app int64, channel string) *userRow {
	x := &s.byChannel
	for i := x.start(hashText(app, channel)); ; i = x.next(i) {
		p, ok := x.at(i)
		if !ok {
			return nil
		}
		if u := s.users.rows.at(p); u.appID == app && u.channel() == channel {
			return u
		}
	}
}

// userByPhone is the user of the lowest id with (app, phone), nil if none.
func (s *Store) userByPhone(app int64, phone string) *userRow {
	var found *userRow
	x := &s.byPhone
	for i := x.start(hashText(app, phone)); ; i = x.next(i) {
		p, ok := x.at(i)
		if !ok {
			return found
		}
		u := s.users.rows.at(p)
		if v, _ := u.phone(); u.appID == app && v == phone && (found == nil || u.id < found.id) {
			found = u
		}
	}
}

// groupsOf appends to places those of the user's groups, in the order of
// their ids.
func (s *Store) groupsOf(userID int64, places []uint32) []uint32 {
	return placesOf(&s.userGroups, &s.groups.rows, func(g *groupRow) int64 { return g.userID }, userID, places)
}

// membersOf appends to places those of the user's members, in the order
// of their ids.
func (s *Store) membersOf(userID int64, places []uint32) []uint32 {
	return placesOf(&s.userMembers, &s.members.rows, func(m *memberRow) int64 { return m.userID }, userID, places)
}

// placesOf appends to places those x holds whose row in rows has the
// owner id, in the order of the rows' ids.
func placesOf[R idRow](x *placeIndex, rows *table[R], owner func(*R) int64, id int64, places []uint32) []uint32 {
	for i := x.start(hashID(id)); ; i = x.next(i) {
		p, ok := x.at(i)
		if !ok {
			break
		}
		if owner(rows.at(p)) == id {
			places = append(places, p)
		}
	}
	slices.SortFunc(places, func(a, b uint32) int { return cmp.Compare((*rows.at(a)).rowID(), (*rows.at(b)).rowID()) })
	return places
}

// liveCount is how many members of the group are not deleted.
func (s *Store) liveCount(groupID int64) int {
	n := 0
	x := &s.groupMembers
	for i := x.start(hashID(groupID)); ; i = x.next(i) {
		p, ok := x.at(i)
		if !ok {
			return n
		}
		if m := s.members.rows.at(p); m.groupID == groupID && !m.deleted() {
			n++
		}
	}
}

// The hashes of the keys of the rows at a place (placeIndex's hashOf).

func (s *Store) channelHashAt(p uint32) uint64 {
	u := s.users.rows.at(p)
	return hashText(u.appID, u.channel())
}

func (s *Store) phoneHashAt(p uint32) uint64 {
	u := s.users.rows.at(p)
	phone, _ := u.phone()
	return hashText(u.appID, phone)
}

func (s *Store) groupUserHashAt(p uint32) uint64 { return hashID(s.groups.rows.at(p).userID) }

func (s *Store) memberUserHashAt(p uint32) uint64 { return hashID(s.members.rows.at(p).userID) }

func (s *Store) memberGroupHashAt(p uint32) uint64 { return hashID(s.members.rows.at(p).groupID) }

// indexUser adds u, in the users' table already, to the users' indexes;
// unindexUser takes it out while it is still in the table.
func (s *Store) indexUser(u userRow) {
	p, _ := s.users.place(u.id)
	s.byChannel.add(hashText(u.appID, u.channel()), p, s.channelHashAt)
	if phone, ok := u.phone(); ok {
		s.byPhone.add(hashText(u.appID, phone), p, s.phoneHashAt)
	}
}

func (s *Store) unindexUser(u userRow) {
	p, _ := s.users.place(u.id)
	s.byChannel.remove(hashText(u.appID, u.channel()), p, s.channelHashAt)
	if phone, ok := u.phone(); ok {
		s.byPhone.remove(hashText(u.appID, phone), p, s.phoneHashAt)
	}
}

func (s *Store) indexGroup(g groupRow) {
	p, _ := s.groups.place(g.id)
	s.userGroups.add(hashID(g.userID), p, s.groupUserHashAt)
}

func (s *Store) unindexGroup(g groupRow) {
	p, _ := s.groups.place(g.id)
	s.userGroups.remove(hashID(g.userID), p, s.groupUserHashAt)
}

func (s *Store) indexMember(m memberRow) {
	p, _ := s.members.place(m.id)
	s.userMembers.add(hashID(m.userID), p, s.memberUserHashAt)
	s.groupMembers.add(hashID(m.groupID), p, s.memberGroupHashAt)
}

func (s *Store) unindexMember(m memberRow) {
	p, _ := s.members.place(m.id)
	s.userMembers.remove(hashID(m.userID), p, s.memberUserHashAt)
	s.groupMembers.remove(hashID(m.groupID), p, s.memberGroupHashAt)
}

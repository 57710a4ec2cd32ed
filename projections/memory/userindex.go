package memory

import (
	"cmp"
	"slices"
)

// The users read model's indexes are of its tables' places: users by
// channel id (a placeIndex: one user holds a channel id) and by phone,
// groups by user, members by user and by group (chainIndexes: any number
// of rows may share a phone, a user or a group). Each reads only the rows
// of its own table, so the restore's lanes (users, groups, members) fill
// them concurrently. A group's live member count is counted from its
// members when read: a family holds a few.

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

// userByPhone is the user of the lowest id with (app, phone), nil if none:
// the head of the phone's chain.
func (s *Store) userByPhone(app int64, phone string) *userRow {
	p, ok := s.byPhone.first(hashText(app, phone), s.hasPhone(app, phone))
	if !ok {
		return nil
	}
	return s.users.rows.at(p)
}

// hasPhone says whether the user at a place has (app, phone).
func (s *Store) hasPhone(app int64, phone string) func(uint32) bool {
	return func(p uint32) bool {
		u := s.users.rows.at(p)
		if u.appID != app { // before decoding the phone from the row's texts
			return false
		}
		v, ok := u.phone()
		return ok && v == phone
	}
}

// groupsOf appends to places those of the user's groups, in the order of
// their ids.
func (s *Store) groupsOf(userID int64, places []uint32) []uint32 {
	return placesOf(&s.userGroups, &s.groups.rows, hashID(userID), s.groupOfUser(userID), places)
}

// membersOf appends to places those of the user's members, in the order
// of their ids.
func (s *Store) membersOf(userID int64, places []uint32) []uint32 {
	return placesOf(&s.userMembers, &s.members.rows, hashID(userID), s.memberOfUser(userID), places)
}

// placesOf appends to places those of the rows in rows that x chains
// under the key hashing to h (is tells its rows), in the order of the
// rows' ids.
func placesOf[R idRow](x *chainIndex, rows *table[R], h uint64, is func(uint32) bool, places []uint32) []uint32 {
	for p, ok := x.first(h, is); ok; p, ok = x.next(p) {
		places = append(places, p)
	}
	slices.SortFunc(places, func(a, b uint32) int { return cmp.Compare((*rows.at(a)).rowID(), (*rows.at(b)).rowID()) })
	return places
}

// The keys of the groups' and members' chains: whether the row at a place
// has the owner id.

func (s *Store) groupOfUser(id int64) func(uint32) bool {
	return func(p uint32) bool { return s.groups.rows.at(p).userID == id }
}

func (s *Store) memberOfUser(id int64) func(uint32) bool {
	return func(p uint32) bool { return s.members.rows.at(p).userID == id }
}

func (s *Store) memberOfGroup(id int64) func(uint32) bool {
	return func(p uint32) bool { return s.members.rows.at(p).groupID == id }
}

// The orders of the chains: whether the row at place a has a lower id than
// the one at b.

func (s *Store) userLess(a, b uint32) bool { return s.users.rows.at(a).id < s.users.rows.at(b).id }

func (s *Store) groupLess(a, b uint32) bool { return s.groups.rows.at(a).id < s.groups.rows.at(b).id }

func (s *Store) memberLess(a, b uint32) bool {
	return s.members.rows.at(a).id < s.members.rows.at(b).id
}

// liveCount is how many members of the group are not deleted.
func (s *Store) liveCount(groupID int64) int {
	n := 0
	x := &s.groupMembers
	for p, ok := x.first(hashID(groupID), s.memberOfGroup(groupID)); ok; p, ok = x.next(p) {
		if !s.members.rows.at(p).deleted() {
			n++
		}
	}
	return n
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

// indexUser adds u, at place p of the users' table already, to the users'
// indexes; unindexUser takes it out while it is still in the table. An
// index whose key the write leaves as it was (a write keeps a row's
// place) is left alone: taking a row out of its key's chain walks the
// chain.
func (s *Store) indexUser(p uint32, cur userRow, had bool, u userRow) {
	if !had || !sameChannel(cur, u) {
		s.byChannel.add(hashText(u.appID, u.channel()), p, s.channelHashAt)
	}
	if phone, ok := u.phone(); ok && (!had || !samePhone(cur, u)) {
		s.byPhone.add(hashText(u.appID, phone), p, s.hasPhone(u.appID, phone), s.userLess, s.phoneHashAt)
	}
}

func (s *Store) unindexUser(u userRow, keep bool, next userRow) {
	p, _ := s.users.place(u.id)
	if !keep || !sameChannel(u, next) {
		s.byChannel.remove(hashText(u.appID, u.channel()), p, s.channelHashAt)
	}
	if phone, ok := u.phone(); ok && (!keep || !samePhone(u, next)) {
		s.byPhone.remove(hashText(u.appID, phone), p, s.hasPhone(u.appID, phone), s.userLess, s.phoneHashAt)
	}
}

func sameChannel(a, b userRow) bool { return a.appID == b.appID && a.channel() == b.channel() }

func samePhone(a, b userRow) bool {
	pa, oka := a.phone()
	pb, okb := b.phone()
	return a.appID == b.appID && oka == okb && pa == pb
}

func (s *Store) indexGroup(p uint32, cur groupRow, had bool, g groupRow) {
	if had && cur.userID == g.userID {
		return
	}
	s.userGroups.add(hashID(g.userID), p, s.groupOfUser(g.userID), s.groupLess, s.groupUserHashAt)
}

func (s *Store) unindexGroup(g groupRow, keep bool, next groupRow) {
	if keep && g.userID == next.userID {
		return
	}
	p, _ := s.groups.place(g.id)
	s.userGroups.remove(hashID(g.userID), p, s.groupOfUser(g.userID), s.groupLess, s.groupUserHashAt)
}

func (s *Store) indexMember(p uint32, cur memberRow, had bool, m memberRow) {
	if !had || cur.userID != m.userID {
		s.userMembers.add(hashID(m.userID), p, s.memberOfUser(m.userID), s.memberLess, s.memberUserHashAt)
	}
	if !had || cur.groupID != m.groupID {
		s.groupMembers.add(hashID(m.groupID), p, s.memberOfGroup(m.groupID), s.memberLess, s.memberGroupHashAt)
	}
}

func (s *Store) unindexMember(m memberRow, keep bool, next memberRow) {
	p, _ := s.members.place(m.id)
	if !keep || m.userID != next.userID {
		s.userMembers.remove(hashID(m.userID), p, s.memberOfUser(m.userID), s.memberLess, s.memberUserHashAt)
	}
	if !keep || m.groupID != next.groupID {
		s.groupMembers.remove(hashID(m.groupID), p, s.memberOfGroup(m.groupID), s.memberLess, s.memberGroupHashAt)
	}
}

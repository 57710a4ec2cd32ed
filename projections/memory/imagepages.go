package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory/snapfile"
)

// pageRows bounds the rows one hold of the users read model's lock reads
// while a snapshot is written: its keys are listed and its rows read that
// many at a time, the lock released in between (a variable for tests).
// A hold of 4,096 rows is about half a millisecond of map lookups.
var pageRows = 4096

// errImageReset is a paged image whose read model was emptied (a rebuild or
// a restore) while the snapshot was being written: the write fails, and
// the reset's own invalidation drops any older snapshot.
var errImageReset = errors.New("projections/memory: read model reset while its image was written")

// prior is a row as it was when a paged image began: the value, and
// whether the key existed then.
type prior[V any] struct {
	v   V
	had bool
}

// usersImaging is the copy-on-write side of a paged image of the users
// read model: the first write to a key after the image began keeps the
// key's row as it was (setUser, setGroup, setMember), so the image reads
// every row at its checkpoint although the projector goes on writing
// between the image's pages. It holds one entry per key written during
// the snapshot write (about one per event), not a copy of the read model.
type usersImaging struct {
	users   map[int64]prior[projections.User]
	groups  map[int64]prior[projections.Group]
	members map[int64]prior[projections.Member]
}

// remember keeps key k's row of live as it is, unless a write since the
// image began kept it already; the caller holds the write lock.
func remember[V any](priors map[int64]prior[V], live map[int64]V, k int64) {
	if _, kept := priors[k]; !kept {
		v, had := live[k]
		priors[k] = prior[V]{v: v, had: had}
	}
}

// usersPages lends the users read model's tables to snapfile.Write at the
// checkpoint the image was taken at (snapfile.Pager).
type usersPages struct {
	s   *Store
	gen uint64 // the read model's generation when the image began

	users   pagedTable[projections.User]
	groups  pagedTable[projections.Group]
	members pagedTable[projections.Member]
}

// pagedTable is one table of a paged image: the map it was listed from,
// its keys at the checkpoint in order, and the page buffer reused by
// every page.
type pagedTable[V any] struct {
	live   map[int64]V
	priors map[int64]prior[V]
	keys   []int64
	page   []V
	// created are the keys that did not exist when the image began, as
	// list found them (order drops them).
	created map[int64]bool
}

// imageUsersPaged begins a paged image of the users read model: its
// checkpoint is read and its copy-on-write side installed in one short
// hold of the write lock, then its keys are listed under the read lock,
// pageRows at a time. The rows are read by the returned image's pager, a
// page at a time, as snapfile.Write encodes them. end must be called once
// the image is no longer read; until then every write to the read model
// keeps its key's row as it was.
//
// Unlike Image, no hold of the lock copies every row: a snapshot of a
// large read model neither stops the projector for the whole copy nor
// allocates a second copy of every row for the collector to scan.
func (s *Store) imageUsersPaged(ctx context.Context) (im snapfile.Image, end func(), err error) {
	if err := ctx.Err(); err != nil {
		return snapfile.Image{}, nil, err
	}
	imaging := &usersImaging{
		users:   map[int64]prior[projections.User]{},
		groups:  map[int64]prior[projections.Group]{},
		members: map[int64]prior[projections.Member]{},
	}
	p := &usersPages{s: s}
	im = snapfile.Image{ReadModel: projections.ReadModelUsers, Paged: p}
	s.usersMu.Lock()
	if s.usersImaging != nil {
		s.usersMu.Unlock()
		return snapfile.Image{}, nil, errors.New("projections/memory: a paged image of the users read model is already being read")
	}
	s.cpMu.Lock()
	im.Checkpoint = s.checkpoints[string(projections.ReadModelUsers)]
	s.cpMu.Unlock()
	s.usersImaging = imaging
	p.gen = s.usersGen
	p.users = pagedTable[projections.User]{live: s.users, priors: imaging.users}
	p.groups = pagedTable[projections.Group]{live: s.groups, priors: imaging.groups}
	p.members = pagedTable[projections.Member]{live: s.members, priors: imaging.members}
	s.usersMu.Unlock()
	end = func() {
		s.usersMu.Lock()
		if s.usersImaging == imaging {
			s.usersImaging = nil
		}
		s.usersMu.Unlock()
	}
	s.usersMu.RLock()
	p.users.list(s)
	p.groups.list(s)
	p.members.list(s)
	reset := s.usersGen != p.gen
	s.usersMu.RUnlock()
	if reset {
		end()
		return snapfile.Image{}, nil, errImageReset
	}
	p.users.order()
	p.groups.order()
	p.members.order()
	return im, end, nil
}

// list gathers the table's keys at the checkpoint; the caller holds the
// read lock, which list releases (and takes again) after every pageRows
// keys. A map may be written between two steps of its range: a key
// present throughout is listed once; a key created since the image began
// has a prior that says so (order drops it); a key deleted before the
// range reached it is listed from its prior.
func (t *pagedTable[V]) list(s *Store) {
	t.keys = make([]int64, 0, len(t.live)+len(t.priors))
	n := 0
	for k := range t.live {
		t.keys = append(t.keys, k)
		if n++; n%pageRows == 0 {
			s.usersMu.RUnlock()
			s.imageStepped()
			s.usersMu.RLock()
		}
	}
	t.created = map[int64]bool{}
	for k, p := range t.priors {
		if p.had {
			t.keys = append(t.keys, k)
		} else {
			t.created[k] = true
		}
	}
}

// order sorts the listed keys and drops duplicates (a key listed from the
// map and from its prior) and the keys created since the image began,
// outside the lock.
func (t *pagedTable[V]) order() {
	slices.Sort(t.keys)
	t.keys = slices.Compact(t.keys)
	if len(t.created) > 0 {
		t.keys = slices.DeleteFunc(t.keys, func(k int64) bool { return t.created[k] })
	}
	t.created = nil
}

// read appends the rows of keys [from, to) as they were at the checkpoint
// to the page; the caller holds the read lock.
func (t *pagedTable[V]) read(from, to int) error {
	for _, k := range t.keys[from:to] {
		if p, kept := t.priors[k]; kept {
			if !p.had {
				return fmt.Errorf("projections/memory: row %d of the image did not exist at its checkpoint", k)
			}
			t.page = append(t.page, p.v)
			continue
		}
		v, ok := t.live[k]
		if !ok {
			return fmt.Errorf("projections/memory: row %d of the image is gone without a prior", k)
		}
		t.page = append(t.page, v)
	}
	return nil
}

// pageOf reads the table's rows [from, to) into its page, holding the read
// lock for at most pageRows rows at a time.
func (t *pagedTable[V]) pageOf(p *usersPages, from, to int) ([]V, error) {
	s := p.s
	// The page is made before the lock is taken, and once per write: grown
	// row by row under the lock it cost several times its size in copies
	// and held the lock for the allocations.
	if cap(t.page) < to-from {
		t.page = make([]V, 0, to-from)
	}
	t.page = t.page[:0]
	for at := from; at < to; {
		next := min(at+pageRows, to)
		s.usersMu.RLock()
		var err error
		if s.usersGen != p.gen {
			err = errImageReset
		} else {
			err = t.read(at, next)
		}
		s.usersMu.RUnlock()
		s.imageStepped()
		if err != nil {
			return nil, err
		}
		at = next
	}
	return t.page, nil
}

// Len implements snapfile.Pager.
func (p *usersPages) Len(t snapfile.Table) (int, bool) {
	switch t {
	case snapfile.TableUsers:
		return len(p.users.keys), true
	case snapfile.TableGroups:
		return len(p.groups.keys), true
	case snapfile.TableMembers:
		return len(p.members.keys), true
	}
	return 0, false
}

// Page implements snapfile.Pager.
func (p *usersPages) Page(t snapfile.Table, from, to int, page *snapfile.Image) (err error) {
	switch t {
	case snapfile.TableUsers:
		page.Users, err = p.users.pageOf(p, from, to)
	case snapfile.TableGroups:
		page.Groups, err = p.groups.pageOf(p, from, to)
	case snapfile.TableMembers:
		page.Members, err = p.members.pageOf(p, from, to)
	default:
		err = fmt.Errorf("projections/memory: the users image has no table %d", t)
	}
	return err
}

// imageStepped runs the test hook (SetImageStep) after a paged image
// released the read lock between two of its steps.
func (s *Store) imageStepped() {
	if s.imageStep != nil {
		s.imageStep()
	}
}

package snapfile

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/healthtech/partner-open-platform/projections"
)

// partsRestorer records the parts a read gives it, their texts copied
// (a part it does not keep is reused once Rows returns).
type partsRestorer struct {
	keeps  bool
	users  []projections.User
	parts  int
	arrays map[*projections.User]bool // the parts' backing arrays
	ended  bool
}

func (r *partsRestorer) Lane(Table) int      { return 0 }
func (r *partsRestorer) Keeps(Table) bool    { return r.keeps }
func (r *partsRestorer) End(err error) error { r.ended = true; return err }
func (r *partsRestorer) Rows(t Table, part *Image) error {
	if t != TableUsers {
		return fmt.Errorf("rows of table %d", t)
	}
	r.parts++
	r.arrays[unsafe.SliceData(part.Users)] = true
	for _, u := range part.Users {
		u.ChannelUserID, u.Name = strings.Clone(u.ChannelUserID), strings.Clone(u.Name)
		r.users = append(r.users, u)
	}
	return nil
}

// A file that counts its tables is restored a section at a time, in
// order, and the rows of a table its restorer does not keep are decoded
// into a few reused arrays, never into one for the whole table.
func TestCountedSectionsAreRestoredAsTheyAreDecoded(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	users := make([]projections.User, 20000)
	for i := range users {
		users[i] = projections.User{AppID: 1, OpenUserID: int64(i + 1), ChannelUserID: fmt.Sprintf("c%d", i), Name: strings.Repeat("n", 100), RegisteredAt: at, UpdatedAt: at}
	}
	im := Image{ReadModel: projections.ReadModelUsers, Users: users}
	var body bytes.Buffer
	if err := writeSections(&body, []Image{im}, nil, nil); err != nil {
		t.Fatal(err)
	}
	h := Header{ReadModels: []ReadModel{{ReadModel: projections.ReadModelUsers, Tables: tableRows(&im)}}}
	for _, keeps := range []bool{false, true} {
		r := &partsRestorer{keeps: keeps, arrays: map[*projections.User]bool{}}
		if _, err := readSections(bytes.NewReader(body.Bytes()), h, 3, func(ReadModel, []int) (Restorer, error) { return r, nil }); err != nil {
			t.Fatal(err)
		}
		if !r.ended || r.parts < 8 {
			t.Fatalf("keeps %v: %d parts (ended %v), want a part per section of a 2.5 MB table", keeps, r.parts, r.ended)
		}
		if len(r.users) != len(users) {
			t.Fatalf("keeps %v: %d users restored of %d", keeps, len(r.users), len(users))
		}
		for i := range users {
			if r.users[i] != users[i] {
				t.Fatalf("keeps %v: user %d restored as %+v, want %+v", keeps, i, r.users[i], users[i])
			}
		}
		inFlight := 2*max(runtime.GOMAXPROCS(0), 2) + 2
		switch {
		case !keeps && len(r.arrays) > inFlight:
			t.Errorf("rows decoded into %d arrays for %d parts, want at most %d reused", len(r.arrays), r.parts, inFlight)
		case keeps && len(r.arrays) != r.parts:
			t.Errorf("kept rows decoded into %d arrays for %d parts, want one each", len(r.arrays), r.parts)
		}
	}
}

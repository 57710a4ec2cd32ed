package snapfile

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/projections"
)

// slicePager lends an image's users from a slice, a section at a time,
// reusing one page buffer, and counts the pages asked.
type slicePager struct {
	users []projections.User
	page  []projections.User
	pages int
	short bool // lend one row too few
}

func (p *slicePager) Len(t Table) (int, bool) {
	if t == TableUsers {
		return len(p.users), true
	}
	return 0, false
}

func (p *slicePager) Page(t Table, from, to int, page *Image) error {
	if t != TableUsers {
		return fmt.Errorf("table %d is not lent", t)
	}
	p.pages++
	if p.short {
		to--
	}
	p.page = append(p.page[:0], p.users[from:to]...)
	page.Users = p.page
	return nil
}

func testAEAD(t *testing.T) cipher.AEAD {
	t.Helper()
	block, err := aes.NewCipher(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	return aead
}

// A table lent by a Pager is written section by section from its pages and
// reads back as the same rows a slice of them writes, with the header's
// row count; a page of the wrong size fails the write.
func TestPagedTableReadsBackAsItsRows(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	users := make([]projections.User, 2*sectionRows+17)
	for i := range users {
		users[i] = projections.User{AppID: 1, OpenUserID: int64(i + 1), ChannelUserID: fmt.Sprintf("c%d", i), Name: strings.Repeat("n", i%7), Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at}
	}
	groups := []projections.Group{{AppID: 1, OpenUserID: 1, FamilyGroupID: 1, Name: "g", CreatedAt: at, UpdatedAt: at}}
	aead := testAEAD(t)
	dir := t.TempDir()
	pager := &slicePager{users: users}
	paged := Image{ReadModel: projections.ReadModelUsers, Groups: groups, Paged: pager}
	whole := Image{ReadModel: projections.ReadModelUsers, Users: users, Groups: groups}
	if paged.Rows() != whole.Rows() {
		t.Fatalf("a paged image counts %d rows: want %d", paged.Rows(), whole.Rows())
	}
	path := filepath.Join(dir, "paged")
	if _, err := Write(path, Header{ReadModels: []ReadModel{{ReadModel: projections.ReadModelUsers, Rows: paged.Rows()}}}, aead, []Image{paged}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if want := 2*sectionRows/paceRows + 1; pager.pages != want {
		t.Fatalf("the pager lent %d pages: want %d (one per %d rows of each section of %d)", pager.pages, want, paceRows, sectionRows)
	}
	_, images, _, err := Read(path, aead)
	if err != nil {
		t.Fatal(err)
	}
	if len(images) != 1 || !reflect.DeepEqual(images[0], whole) {
		t.Fatal("the paged image reads back different from its rows")
	}
	short := Image{ReadModel: projections.ReadModelUsers, Paged: &slicePager{users: users, short: true}}
	if _, err := Write(filepath.Join(dir, "short"), Header{}, aead, []Image{short}, nil, nil); err == nil {
		t.Fatal("a page one row short was written")
	}
}

// A write rests its goroutine (pace) after each part of a lent table it
// reads and encodes, not only after each sealed chunk: a section smaller
// than a chunk is still paced a part at a time.
func TestWritePacesEachPartOfALentSection(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	users := make([]projections.User, 5*paceRows+3)
	for i := range users {
		users[i] = projections.User{AppID: 1, OpenUserID: int64(i + 1), ChannelUserID: fmt.Sprintf("c%d", i), Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at}
	}
	im := Image{ReadModel: projections.ReadModelUsers, Paged: &slicePager{users: users}}
	paces := 0
	size, err := Write(filepath.Join(t.TempDir(), "paced"), Header{}, testAEAD(t), []Image{im}, nil, func() { paces++ })
	if err != nil {
		t.Fatal(err)
	}
	if size >= snapshotChunk {
		t.Fatalf("the file is %d bytes: want less than a chunk", size)
	}
	// Six parts of the one section, then the one (final) chunk.
	if want := 6 + 1; paces != want {
		t.Fatalf("the write paced %d times: want %d (after each of 6 parts of %d rows and the chunk)", paces, want, paceRows)
	}
}

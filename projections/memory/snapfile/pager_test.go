package snapfile

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
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

// A table whose rows encode to more than a section's bound is written in
// sections of at most the bound and one row, lent or not, and reads back
// whole and in order; a lent table is still read a part at a time, a part
// spanning two sections read once.
func TestLargeTableIsWrittenInBoundedSections(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	users := make([]projections.User, 2*paceRows+9)
	for i := range users {
		users[i] = projections.User{AppID: 1, OpenUserID: int64(i + 1), ChannelUserID: fmt.Sprintf("c%d", i), Name: strings.Repeat("n", 300+i%50), RegisteredAt: at, UpdatedAt: at}
	}
	deliveries := make([]projections.Delivery, 700)
	for i := range deliveries {
		deliveries[i] = projections.Delivery{DeliveryID: fmt.Sprintf("d%04d", i), AppID: 1, Body: bytes.Repeat([]byte{'b'}, 1000+i), Status: "delivered", CreatedAt: at, UpdatedAt: at}
	}
	pager := &slicePager{users: users}
	paged := Image{ReadModel: projections.ReadModelUsers, Paged: pager}
	sent := Image{ReadModel: projections.ReadModelDeliveries, Deliveries: deliveries}
	aead := testAEAD(t)
	path := filepath.Join(t.TempDir(), "large")
	h := Header{ReadModels: []ReadModel{{ReadModel: projections.ReadModelUsers, Rows: len(users)}, {ReadModel: projections.ReadModelDeliveries, Rows: len(deliveries)}}}
	if _, err := Write(path, h, aead, []Image{paged, sent}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if want := 3; pager.pages != want {
		t.Fatalf("the pager lent %d pages: want %d (one per %d rows)", pager.pages, want, paceRows)
	}
	sections := map[Table][]int{}
	for _, s := range fileSections(t, path, aead) {
		if s.owner != dirsOwner {
			sections[Table(s.table)] = append(sections[Table(s.table)], s.size)
		}
	}
	for table, sizes := range sections {
		if len(sizes) < 2 {
			t.Fatalf("table %d: %d section(s) of %v bytes: want several of at most %d", table, len(sizes), sizes, sectionBytes)
		}
		for _, size := range sizes {
			if size > sectionBytes+sectionSlack {
				t.Fatalf("table %d: a section of %d bytes: want at most %d and a row", table, size, sectionBytes)
			}
		}
	}
	_, images, _, err := Read(path, aead)
	if err != nil {
		t.Fatal(err)
	}
	want := []Image{{ReadModel: projections.ReadModelUsers, Users: users}, sent}
	if !reflect.DeepEqual(images, want) {
		t.Fatal("the tables read back different from their rows")
	}
}

// fileSection is one section of a version 3 file as its prefix tells it.
type fileSection struct {
	owner uint32
	table uint16
	size  int
}

// fileSections lists the sections of the version 3 file at path.
func fileSections(t *testing.T, path string, aead cipher.AEAD) []fileSection {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	_, head, _, err := readHeader(br)
	if err != nil {
		t.Fatal(err)
	}
	or := &openReader{r: br, aead: aead, head: head}
	var out []fileSection
	for {
		var pre [14]byte
		if _, err := io.ReadFull(or, pre[:]); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		s := fileSection{owner: binary.BigEndian.Uint32(pre[0:]), table: binary.BigEndian.Uint16(pre[4:]), size: int(binary.BigEndian.Uint64(pre[6:]))}
		if _, err := io.CopyN(io.Discard, or, int64(s.size)); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
}

// A table read in several sections reads back the same whether the
// header counts its rows (each section decoded into its place) or not (a
// file written before the header counted them: the sections assembled);
// a header that counts other rows than the sections hold leaves the file
// unused.
func TestTableCountsOfTheHeaderPlaceEachSection(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	users := make([]projections.User, 3000)
	for i := range users {
		users[i] = projections.User{AppID: 1, OpenUserID: int64(i + 1), ChannelUserID: fmt.Sprintf("c%d", i), Name: strings.Repeat("n", 300), RegisteredAt: at, UpdatedAt: at}
	}
	members := []projections.Member{{AppID: 1, OpenUserID: 1, MemberID: 7, Name: "m", UpdatedAt: at}}
	im := Image{ReadModel: projections.ReadModelUsers, Users: users, Members: members}
	var body bytes.Buffer
	if err := writeSections(&body, []Image{im}, nil, nil); err != nil {
		t.Fatal(err)
	}
	read := func(tables []int) (Image, error) {
		h := Header{ReadModels: []ReadModel{{ReadModel: projections.ReadModelUsers, Tables: tables}}}
		got := map[projections.ReadModel]Image{}
		_, err := readSections(bytes.NewReader(body.Bytes()), h, 3, collectInto(got))
		return got[projections.ReadModelUsers], err
	}
	if got := tableRows(&im); !reflect.DeepEqual(got, []int{3000, 0, 1}) {
		t.Fatalf("the header counts %v rows: want [3000 0 1]", got)
	}
	for _, tables := range [][]int{{3000, 0, 1}, nil} {
		got, err := read(tables)
		if err != nil {
			t.Fatalf("counts %v: %v", tables, err)
		}
		if !reflect.DeepEqual(got, im) {
			t.Fatalf("counts %v: the image reads back different from its rows", tables)
		}
	}
	for _, tables := range [][]int{{2999, 0, 1}, {3001, 0, 1}, {3000}, {3000, 1, 1}} {
		if _, err := read(tables); !errors.Is(err, ErrInvalid) {
			t.Fatalf("counts %v against 3000 users and a member: %v, want ErrInvalid", tables, err)
		}
	}
}

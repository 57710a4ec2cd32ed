package snapfile

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"

	"github.com/healthtech/partner-open-platform/projections"
)

// sectionRows bounds the rows of one section: small enough that a start
// decodes a big table on every core and never holds one huge buffer,
// large enough that gob's per-stream type descriptions cost nothing.
const sectionRows = 16384

// paceRows is how many rows of a lent table writeSections reads and
// encodes between two calls of its pace: a section of 16,384 rows took a
// snapshot write's goroutine tens of milliseconds of a core in one go,
// which on a two-core node answering requests queued them for that long.
const paceRows = 1024

// dirsOwner marks the section that holds the directory journals.
const dirsOwner = ^uint32(0)

// maxSection bounds one section's encoded size, so a damaged length (which
// the chunk seals already exclude) could not ask for a huge allocation.
const maxSection = 1 << 30

// imageField is one table of a Image as the version 2 format writes
// it: its rows are cut into sections, each decoded on its own.
type imageField struct {
	rows func(im *Image) int
	// appendUntil appends rows [from, to) alone, without the section's
	// row count, until e holds limit bytes (see rowCodec.appendUntil); it
	// returns how many rows it appended.
	appendUntil func(e *rowEncoder, im *Image, from, to, limit int) int
	// decode reads a section of the current format (the row codec);
	// decodeGob one of version 2 (a gob stream).
	decode    func(body []byte) (any, error)
	decodeGob func(body []byte) (any, error)
	// assemble sets the table from its decoded sections, in order.
	assemble func(im *Image, parts []any)
	// make makes a table of n rows; decodeInto decodes a section of the
	// current format into rows[at:] (which must hold at least its rows);
	// set sets the image's table.
	make       func(n int) any
	decodeInto func(body []byte, rows any, at int) error
	set        func(im *Image, rows any)
}

func field[T any](codec rowCodec[T], get func(im *Image) *[]T) imageField {
	return imageField{
		rows: func(im *Image) int { return len(*get(im)) },
		appendUntil: func(e *rowEncoder, im *Image, from, to, limit int) int {
			return codec.appendUntil(e, (*get(im))[from:to], limit)
		},
		decode: func(body []byte) (any, error) { return codec.decodeRows(body) },
		decodeGob: func(body []byte) (any, error) {
			var part []T
			err := gob.NewDecoder(bytes.NewReader(body)).Decode(&part)
			return part, err
		},
		assemble: func(im *Image, parts []any) {
			n := 0
			for _, p := range parts {
				n += len(p.([]T))
			}
			rows := make([]T, 0, n)
			for _, p := range parts {
				rows = append(rows, p.([]T)...)
			}
			*get(im) = rows
		},
		make: func(n int) any { return make([]T, n) },
		decodeInto: func(body []byte, rows any, at int) error {
			return codec.decodeRowsInto(body, rows.([]T)[at:])
		},
		set: func(im *Image, rows any) { *get(im) = rows.([]T) },
	}
}

// tableRows counts the rows of each of im's tables (a lent one's as its
// pager tells), without the trailing empty ones.
func tableRows(im *Image) []int {
	var n []int
	for fi, f := range imageFields {
		rows := f.rows(im)
		if im.Paged != nil {
			if m, ok := im.Paged.Len(Table(fi)); ok {
				rows = m
			}
		}
		if rows > 0 {
			n = append(n, make([]int, fi+1-len(n))...)
			n[fi] = rows
		}
	}
	return n
}

// imageFields are the tables of a Image, by their index in the file:
// append only, never reorder.
var imageFields = []imageField{
	field(userCodec, func(im *Image) *[]projections.User { return &im.Users }),
	field(groupCodec, func(im *Image) *[]projections.Group { return &im.Groups }),
	field(memberCodec, func(im *Image) *[]projections.Member { return &im.Members }),
	field(deliveryCodec, func(im *Image) *[]projections.Delivery { return &im.Deliveries }),
	field(attemptCodec, func(im *Image) *[]projections.Attempt { return &im.Attempts }),
	field(reportCodec, func(im *Image) *[]projections.Report { return &im.Reports }),
	field(goodsCodec, func(im *Image) *[]projections.Goods { return &im.Goods }),
	field(orderCodec, func(im *Image) *[]projections.Order { return &im.Orders }),
	field(benefitItemCodec, func(im *Image) *[]projections.BenefitItem { return &im.BenefitItems }),
	field(providerCodec, func(im *Image) *[]projections.ServiceProvider { return &im.Providers }),
	field(cardCodec, func(im *Image) *[]projections.Card { return &im.Cards }),
	field(fulfillmentCodec, func(im *Image) *[]projections.Fulfillment { return &im.Fulfillments }),
	field(auditFactCodec, func(im *Image) *[]projections.AuditFact { return &im.AuditFacts }),
}

// sectionBytes bounds the rows a write encodes into one section: a
// section ends at sectionRows rows or at the first row that brings its
// encoded rows to sectionBytes, so a write encodes every section in one
// buffer of about that size (a section of 16,384 deliveries is 3 MB). A
// reader takes sections of any number of rows.
const sectionBytes = 256 << 10

// sectionSlack is room in the section buffer for the row that crosses
// sectionBytes, so a row of up to that size does not grow it.
const sectionSlack = 64 << 10

// writeSections writes the images and directories as version 3 sections:
// each is its owner (image index, or dirsOwner), its table's index, its
// length and its rows in the row codec (the directories: a gob stream).
// A table's rows are encoded into one buffer, made once per write and
// reused by every section, and each section is handed to w as its
// prefix and count, then its rows. A lent table is read paceRows rows at
// a time (a part, which may span two sections), pace (when not nil)
// called after each part is encoded.
func writeSections(w io.Writer, images []Image, dirs []Directory, pace func()) error {
	sw := &sectionWriter{w: w, rows: rowEncoder{buf: make([]byte, 0, sectionBytes+sectionSlack)}}
	var page Image
	for i := range images {
		im := &images[i]
		for fi, f := range imageFields {
			n, paged := f.rows(im), false
			if im.Paged != nil {
				if m, ok := im.Paged.Len(Table(fi)); ok {
					n, paged = m, true
				}
			}
			// Rows [base, end) are src's rows [0, end-base): the image's
			// table, or the part of a lent one last read (none yet).
			src, base, end := im, 0, n
			if paged {
				end = 0
			}
			for at := 0; at < n; {
				if paged && at == end {
					base, end = at, min(at+paceRows, n)
					if err := im.Paged.Page(Table(fi), base, end, &page); err != nil {
						return fmt.Errorf("snapshot %s: %w", im.ReadModel, err)
					}
					if got := f.rows(&page); got != end-base {
						return fmt.Errorf("snapshot %s: a page of %d rows where %d were asked", im.ReadModel, got, end-base)
					}
					src = &page
				}
				take := min(end, at+sectionRows-sw.n)
				added := f.appendUntil(&sw.rows, src, at-base, take-base, sectionBytes)
				at += added
				sw.n += added
				if sw.n == sectionRows || len(sw.rows.buf) >= sectionBytes || at == n {
					if err := sw.section(uint32(i), uint16(fi)); err != nil {
						return fmt.Errorf("snapshot %s: %w", im.ReadModel, err)
					}
				}
				if paged && at == end && pace != nil {
					pace()
				}
			}
		}
	}
	var gb bytes.Buffer
	if err := gob.NewEncoder(&gb).Encode(dirs); err != nil {
		return fmt.Errorf("snapshot directories: %w", err)
	}
	if err := sw.write(dirsOwner, 0, false, gb.Bytes()); err != nil {
		return fmt.Errorf("snapshot directories: %w", err)
	}
	return nil
}

// sectionWriter is the section a writeSections call is encoding: its
// rows so far and how many, and the buffer of a section's prefix and row
// count (kept here: w is an interface, so one on the stack would be
// allocated per section).
type sectionWriter struct {
	w    io.Writer
	rows rowEncoder
	n    int
	head [14 + binary.MaxVarintLen64]byte
}

// section writes the rows encoded as a section of table fieldIndex of
// image owner, and empties the buffer for the next.
func (sw *sectionWriter) section(owner uint32, fieldIndex uint16) error {
	err := sw.write(owner, fieldIndex, true, sw.rows.buf)
	sw.rows.buf, sw.n = sw.rows.buf[:0], 0
	return err
}

// write writes one section: its prefix (owner, table, length), its row
// count if counted, then body.
func (sw *sectionWriter) write(owner uint32, fieldIndex uint16, counted bool, body []byte) error {
	head := sw.head[:14]
	if counted {
		head = binary.AppendUvarint(head, uint64(sw.n))
	}
	binary.BigEndian.PutUint32(head[0:], owner)
	binary.BigEndian.PutUint16(head[4:], fieldIndex)
	binary.BigEndian.PutUint64(head[6:], uint64(len(head)-14+len(body)))
	if _, err := sw.w.Write(head); err != nil {
		return err
	}
	_, err := sw.w.Write(body)
	return err
}

// decodedImage collects one image's sections as they are decoded.
type decodedImage struct {
	wg    sync.WaitGroup
	mu    sync.Mutex
	parts [][]any // by table: the decoded sections in file order
	err   error
	// When the header counts the image's tables (want), each section is
	// decoded into its place in the table's rows (made at the first
	// section); at is how many rows the sections read so far hold.
	want []int
	rows []any
	at   []int
}

// readSections reads version 2 or 3 sections from r (the opened chunks) and
// hands each read model's image to restore as soon as every one of its
// sections is decoded: sections are decoded concurrently (at most
// GOMAXPROCS at a time, which also bounds the encoded bytes held) and
// read models are restored concurrently, each in one call. It returns the
// directory journals once everything is decoded and restored; any error,
// from the file or from restore, is returned after every goroutine ended.
func readSections(r io.Reader, h Header, version int, restore func(Image) error) ([]Directory, error) {
	sr := &sectionReader{
		r: r, h: h, version: version, restore: restore,
		workers:   make(chan struct{}, max(runtime.GOMAXPROCS(0), 2)),
		images:    make([]*decodedImage, len(h.ReadModels)),
		lastOwner: -1,
	}
	if err := sr.readAll(); err != nil {
		sr.fail(err)
	}
	sr.finishUpTo(len(sr.images)) // images with no rows, or after a failure: wait for their decodes
	sr.restores.Wait()
	if sr.firstErr != nil {
		return nil, sr.firstErr
	}
	return sr.directories()
}

// sectionReader is one readSections call's state.
type sectionReader struct {
	r       io.Reader
	h       Header
	version int
	restore func(Image) error

	workers  chan struct{} // bounds concurrent decodes
	images   []*decodedImage
	restores sync.WaitGroup

	errMu    sync.Mutex
	firstErr error

	next      int // images below next have their restore started
	dirs      []Directory
	seenDirs  bool
	lastOwner int
}

// fail records err if it is the first error.
func (sr *sectionReader) fail(err error) {
	sr.errMu.Lock()
	if sr.firstErr == nil {
		sr.firstErr = err
	}
	sr.errMu.Unlock()
}

func (sr *sectionReader) failed() bool {
	sr.errMu.Lock()
	defer sr.errMu.Unlock()
	return sr.firstErr != nil
}

// finishUpTo starts the restore of every image below limit not yet
// started: each waits for its sections to be decoded.
func (sr *sectionReader) finishUpTo(limit int) {
	for ; sr.next < limit && sr.next < len(sr.images); sr.next++ {
		i, d := sr.next, sr.images[sr.next]
		if d == nil {
			d = &decodedImage{}
			sr.images[i] = d
		}
		sr.restores.Add(1)
		go sr.restoreWhenDecoded(i, d)
	}
}

// restoreWhenDecoded assembles image i from its decoded sections and
// restores it, unless its decoding or anything else failed.
func (sr *sectionReader) restoreWhenDecoded(i int, d *decodedImage) {
	defer sr.restores.Done()
	d.wg.Wait()
	if d.err != nil || sr.failed() {
		sr.fail(d.err)
		return
	}
	im := Image{ReadModel: sr.h.ReadModels[i].ReadModel, Checkpoint: sr.h.ReadModels[i].Checkpoint}
	for fi, parts := range d.parts {
		if len(parts) > 0 {
			imageFields[fi].assemble(&im, parts)
		}
	}
	for fi, rows := range d.rows {
		if d.at[fi] != d.want[fi] {
			sr.fail(fmt.Errorf("%w: %s: table %d holds %d rows, its header %d", ErrInvalid, im.ReadModel, fi, d.at[fi], d.want[fi]))
			return
		}
		if rows != nil {
			imageFields[fi].set(&im, rows)
		}
	}
	d.parts, d.rows = nil, nil
	if err := sr.restore(im); err != nil {
		sr.fail(err)
	}
}

// readAll reads sections until the end of r or a failure.
func (sr *sectionReader) readAll() error {
	for !sr.failed() {
		var pre [14]byte
		if _, err := io.ReadFull(sr.r, pre[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("%w: section: %v", ErrInvalid, err)
		}
		owner, fieldIndex, size := binary.BigEndian.Uint32(pre[0:]), binary.BigEndian.Uint16(pre[4:]), binary.BigEndian.Uint64(pre[6:])
		if sr.seenDirs || size > maxSection {
			return fmt.Errorf("%w: section out of place", ErrInvalid)
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(sr.r, body); err != nil {
			return fmt.Errorf("%w: section: %v", ErrInvalid, err)
		}
		if owner == dirsOwner {
			// The directories come last: every image is complete.
			sr.seenDirs = true
			sr.finishUpTo(len(sr.images))
			if err := gob.NewDecoder(bytes.NewReader(body)).Decode(&sr.dirs); err != nil {
				return fmt.Errorf("%w: directories: %v", ErrInvalid, err)
			}
			continue
		}
		if int(owner) >= len(sr.images) || int(owner) < sr.lastOwner || int(fieldIndex) >= len(imageFields) {
			return fmt.Errorf("%w: section of image %d table %d out of place", ErrInvalid, owner, fieldIndex)
		}
		// Sections come in image order: the images before owner are complete.
		sr.lastOwner = int(owner)
		sr.finishUpTo(int(owner))
		if err := sr.decodeSection(owner, fieldIndex, body); err != nil {
			return err
		}
	}
	return nil
}

// decodeSection decodes one section of image owner in the background
// (waiting for a worker), keeping its place among the table's sections.
func (sr *sectionReader) decodeSection(owner uint32, fieldIndex uint16, body []byte) error {
	d := sr.images[owner]
	if d == nil {
		d = &decodedImage{parts: make([][]any, len(imageFields))}
		if want := sr.h.ReadModels[owner].Tables; sr.version >= 3 && len(want) > 0 && len(want) <= len(imageFields) {
			d.want = make([]int, len(imageFields))
			copy(d.want, want)
			d.rows, d.at = make([]any, len(imageFields)), make([]int, len(imageFields))
		}
		sr.images[owner] = d
	}
	f := imageFields[fieldIndex]
	// In place: the section's rows go at the table's next at rows (its
	// row count leads the section), which must stay within the header's.
	var rows any
	at := -1
	if d.want != nil {
		n, k := binary.Uvarint(body)
		if k <= 0 || n > uint64(d.want[fieldIndex]-d.at[fieldIndex]) {
			return fmt.Errorf("%w: %s: table %d has more rows than its header's %d", ErrInvalid, sr.h.ReadModels[owner].ReadModel, fieldIndex, d.want[fieldIndex])
		}
		if d.rows[fieldIndex] == nil {
			d.rows[fieldIndex] = f.make(d.want[fieldIndex])
		}
		rows, at = d.rows[fieldIndex], d.at[fieldIndex]
		d.at[fieldIndex] += int(n)
	}
	d.mu.Lock()
	slot := len(d.parts[fieldIndex])
	if at < 0 {
		d.parts[fieldIndex] = append(d.parts[fieldIndex], nil)
	}
	d.mu.Unlock()
	d.wg.Add(1)
	sr.workers <- struct{}{}
	go func() {
		defer func() { <-sr.workers; d.wg.Done() }()
		var part any
		var err error
		switch {
		case at >= 0:
			err = f.decodeInto(body, rows, at)
		case sr.version == 2:
			part, err = f.decodeGob(body)
		default:
			part, err = f.decode(body)
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if err != nil {
			if d.err == nil {
				d.err = fmt.Errorf("%w: %s: %v", ErrInvalid, sr.h.ReadModels[owner].ReadModel, err)
			}
			return
		}
		if at < 0 {
			d.parts[fieldIndex][slot] = part
		}
	}()
	return nil
}

// directories returns the directory journals read, once they agree with
// the header.
func (sr *sectionReader) directories() ([]Directory, error) {
	if !sr.seenDirs {
		return nil, fmt.Errorf("%w: no directories section", ErrInvalid)
	}
	if len(sr.dirs) != len(sr.h.Directories) {
		return nil, fmt.Errorf("%w: directories disagree with the header", ErrInvalid)
	}
	for i, d := range sr.dirs {
		if d.Name != string(sr.h.Directories[i].ReadModel) || d.Checkpoint != sr.h.Directories[i].Checkpoint {
			return nil, fmt.Errorf("%w: directory %d disagrees with the header", ErrInvalid, i)
		}
	}
	return slices.Clip(sr.dirs), nil
}

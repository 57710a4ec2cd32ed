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
	// decodeReuse decodes a section of the current format into reuse's
	// rows (a table's rows decodeReuse returned before, nil for none)
	// when they have room, or into rows of their own.
	decodeReuse func(body []byte, reuse any) (any, error)
	// set sets the image's table; move moves the table of from to to;
	// appendPart appends the table of part to im's.
	set        func(im *Image, rows any)
	move       func(to, from *Image)
	appendPart func(im, part *Image)
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
		decodeReuse: func(body []byte, reuse any) (any, error) {
			d := &rowDecoder{buf: body}
			n := d.count()
			if d.err != nil {
				return nil, d.err
			}
			rows, _ := reuse.([]T)
			if cap(rows) < n {
				rows = make([]T, n)
			}
			rows = rows[:n]
			clear(rows) // a decode sets only the fields a row has
			return rows, codec.decodeRowsInto(body, rows)
		},
		set:        func(im *Image, rows any) { *get(im) = rows.([]T) },
		move:       func(to, from *Image) { *get(to), *get(from) = *get(from), nil },
		appendPart: func(im, part *Image) { *get(im) = append(*get(im), *get(part)...) },
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

// decodedImage is one image being read. When the header counts its
// tables (want), its restorer takes each section's rows as soon as they
// are decoded, in the section's lane; otherwise (older files) its
// sections are decoded into parts, assembled once the image is complete.
type decodedImage struct {
	r         Restorer
	want      []int // rows of each table, by the header
	at        []int // rows of each table in the sections read so far
	lanes     map[int]chan *section
	lanesDone sync.WaitGroup

	decodes sync.WaitGroup
	mu      sync.Mutex
	parts   [][]any    // by table: the decoded sections in file order
	err     firstError // a decode's or a restore's
}

// firstError is the first error recorded of several goroutines.
type firstError struct {
	mu  sync.Mutex
	err error
}

// set records err if it is the first.
func (e *firstError) set(err error) {
	e.mu.Lock()
	if e.err == nil {
		e.err = err
	}
	e.mu.Unlock()
}

func (e *firstError) get() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// section is one counted section on its way to its restorer: its bytes,
// and once decoded (decoded closed) its rows or why they do not decode.
type section struct {
	table   Table
	keeps   bool // the restorer keeps its rows: neither they nor body are reused
	body    []byte
	rows    any
	err     error
	decoded chan struct{}
}

// readSections reads version 2 or 3 sections from r (the opened chunks)
// and restores each read model through the Restorer begin gives it.
// Sections are decoded concurrently (at most GOMAXPROCS at a time). A
// counted image's sections are handed to its restorer as they are
// decoded, at most sectionsInFlight of them read and not yet restored,
// so the rows of a whole table are never held at once; an uncounted
// one's are restored once every one of its sections is decoded. Read
// models are restored concurrently. It returns the directory journals
// once everything is decoded and restored; any error, from the file or
// from a restorer, is returned after every goroutine ended, and every
// restorer begun is ended with it unless it had ended already.
func readSections(r io.Reader, h Header, version int, begin Begin) ([]Directory, error) {
	workers := max(runtime.GOMAXPROCS(0), 2)
	sr := &sectionReader{
		r: r, h: h, version: version, begin: begin,
		workers:    make(chan struct{}, workers),
		inFlight:   make(chan struct{}, 2*workers+2),
		freeBodies: make(chan []byte, 2*workers+2),
		freeRows:   make([]chan any, len(imageFields)),
		images:     make([]*decodedImage, len(h.ReadModels)),
		lastOwner:  -1,
	}
	for t := range sr.freeRows {
		sr.freeRows[t] = make(chan any, cap(sr.inFlight))
	}
	if err := sr.readAll(); err != nil {
		sr.fail(err)
	}
	sr.finishUpTo(len(sr.images)) // images with no rows, or after a failure: end their restores
	sr.restores.Wait()
	if err := sr.failed(); err != nil {
		return nil, err
	}
	return sr.directories()
}

// sectionReader is one readSections call's state.
type sectionReader struct {
	r       io.Reader
	h       Header
	version int
	begin   Begin

	workers  chan struct{} // bounds concurrent decodes
	inFlight chan struct{} // bounds the counted sections read and not yet restored
	// freeBodies and freeRows (by table) are the bytes and rows of
	// counted sections restored, for the next sections.
	freeBodies chan []byte
	freeRows   []chan any
	images     []*decodedImage
	restores   sync.WaitGroup

	err firstError

	next      int // images below next are complete: their restores end
	dirs      []Directory
	seenDirs  bool
	lastOwner int
}

// fail records err if it is the first error.
func (sr *sectionReader) fail(err error) { sr.err.set(err) }

// failed is the first error, nil while there is none.
func (sr *sectionReader) failed() error { return sr.err.get() }

// finishUpTo ends the restore of every image below limit not yet ended:
// each waits for its sections to be decoded and restored.
func (sr *sectionReader) finishUpTo(limit int) {
	for ; sr.next < limit && sr.next < len(sr.images); sr.next++ {
		i, d := sr.next, sr.images[sr.next]
		sr.restores.Add(1)
		switch {
		case d == nil:
			go sr.restoreEmpty(i)
		case d.r != nil:
			for _, lane := range d.lanes {
				close(lane)
			}
			go sr.endCounted(i, d)
		default:
			go sr.restoreAssembled(i, d)
		}
	}
}

// restoreEmpty restores image i, of which no section was read.
func (sr *sectionReader) restoreEmpty(i int) {
	defer sr.restores.Done()
	if sr.failed() != nil {
		return
	}
	rm := sr.h.ReadModels[i]
	for t, n := range rm.Tables {
		if n != 0 {
			sr.fail(fmt.Errorf("%w: %s: table %d holds no rows, its header %d", ErrInvalid, rm.ReadModel, t, n))
			return
		}
	}
	r, err := sr.begin(rm, nil)
	if err == nil {
		err = r.End(nil)
	}
	if err != nil {
		sr.fail(err)
	}
}

// endCounted ends image i's restore once its lanes restored every
// section: with the first error met anywhere, or with none once each
// table holds the rows its header counts.
func (sr *sectionReader) endCounted(i int, d *decodedImage) {
	defer sr.restores.Done()
	d.lanesDone.Wait()
	err := d.err.get()
	if err == nil {
		err = sr.failed()
	}
	for t := range d.want {
		if err == nil && d.at[t] != d.want[t] {
			err = fmt.Errorf("%w: %s: table %d holds %d rows, its header %d", ErrInvalid, sr.h.ReadModels[i].ReadModel, t, d.at[t], d.want[t])
		}
	}
	if err = d.r.End(err); err != nil {
		sr.fail(err)
	}
}

// restoreAssembled assembles image i from its decoded sections and
// restores it, unless its decoding or anything else failed.
func (sr *sectionReader) restoreAssembled(i int, d *decodedImage) {
	defer sr.restores.Done()
	d.decodes.Wait()
	if err := d.err.get(); err != nil {
		sr.fail(err)
		return
	}
	if sr.failed() != nil {
		return
	}
	rm := sr.h.ReadModels[i]
	im := Image{ReadModel: rm.ReadModel, Checkpoint: rm.Checkpoint}
	for t, parts := range d.parts {
		if len(parts) > 0 {
			imageFields[t].assemble(&im, parts)
		}
	}
	d.parts = nil
	r, err := sr.begin(rm, tableRows(&im))
	if err == nil {
		err = RestoreWhole(r, &im)
	}
	if err != nil {
		sr.fail(err)
	}
}

// readAll reads sections until the end of r or a failure.
func (sr *sectionReader) readAll() error {
	for sr.failed() == nil {
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
		if owner == dirsOwner {
			body := make([]byte, size)
			if _, err := io.ReadFull(sr.r, body); err != nil {
				return fmt.Errorf("%w: section: %v", ErrInvalid, err)
			}
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
		d, err := sr.image(int(owner))
		if err != nil {
			return err
		}
		if d.r != nil {
			err = sr.readCounted(d, int(owner), Table(fieldIndex), int(size))
		} else {
			err = sr.readPart(d, int(owner), Table(fieldIndex), int(size))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// image is image i's state, made (and, when its tables are counted, its
// restore begun) at its first section.
func (sr *sectionReader) image(i int) (*decodedImage, error) {
	if d := sr.images[i]; d != nil {
		return d, nil
	}
	d := &decodedImage{}
	rm := sr.h.ReadModels[i]
	if sr.version >= 3 && len(rm.Tables) > 0 && len(rm.Tables) <= len(imageFields) {
		d.want, d.at = make([]int, len(imageFields)), make([]int, len(imageFields))
		copy(d.want, rm.Tables)
		r, err := sr.begin(rm, d.want)
		if err != nil {
			return nil, err
		}
		d.r, d.lanes = r, map[int]chan *section{}
	} else {
		d.parts = make([][]any, len(imageFields))
	}
	sr.images[i] = d
	return d, nil
}

// readCounted reads a section of a counted image (size bytes: its row
// count, then its rows), which must stay within its table's rows by the
// header, and hands it to its lane, to be restored once decoded in the
// background.
func (sr *sectionReader) readCounted(d *decodedImage, owner int, t Table, size int) error {
	sr.inFlight <- struct{}{}
	keeps := d.r.Keeps(t)
	body := sr.body(size, keeps)
	if _, err := io.ReadFull(sr.r, body); err != nil {
		<-sr.inFlight
		return fmt.Errorf("%w: section: %v", ErrInvalid, err)
	}
	n, k := binary.Uvarint(body)
	if k <= 0 || n > uint64(d.want[t]-d.at[t]) {
		<-sr.inFlight
		return fmt.Errorf("%w: %s: table %d has more rows than its header's %d", ErrInvalid, sr.h.ReadModels[owner].ReadModel, t, d.want[t])
	}
	d.at[t] += int(n)
	sec := &section{table: t, keeps: keeps, body: body, decoded: make(chan struct{})}
	var reuse any
	if !keeps {
		select {
		case reuse = <-sr.freeRows[t]:
		default:
		}
	}
	sr.workers <- struct{}{}
	go func() {
		defer func() { <-sr.workers; close(sec.decoded) }()
		sec.rows, sec.err = imageFields[t].decodeReuse(body, reuse)
	}()
	lane := d.r.Lane(t)
	ch, ok := d.lanes[lane]
	if !ok {
		ch = make(chan *section, cap(sr.inFlight))
		d.lanes[lane] = ch
		d.lanesDone.Add(1)
		go sr.restoreLane(d, owner, ch)
	}
	ch <- sec
	return nil
}

// body is a buffer of size bytes for a section's bytes: a restored
// section's when the table's rows are not kept and one has room.
func (sr *sectionReader) body(size int, keeps bool) []byte {
	if keeps {
		return make([]byte, size)
	}
	select {
	case b := <-sr.freeBodies:
		if cap(b) >= size {
			return b[:size]
		}
	default:
	}
	return make([]byte, size, max(size, sectionBytes+sectionSlack))
}

// restoreLane restores one lane's sections of image owner in their order,
// each once decoded, and frees each one's place in flight (its bytes and
// rows for the next sections, unless the restorer keeps its rows). After
// an error it only frees them.
func (sr *sectionReader) restoreLane(d *decodedImage, owner int, lane chan *section) {
	defer d.lanesDone.Done()
	for sec := range lane {
		<-sec.decoded
		err := sec.err
		if err != nil {
			err = fmt.Errorf("%w: %s: %v", ErrInvalid, sr.h.ReadModels[owner].ReadModel, err)
		} else if d.err.get() == nil && sr.failed() == nil {
			var part Image
			imageFields[sec.table].set(&part, sec.rows)
			err = d.r.Rows(sec.table, &part)
		}
		if err != nil {
			d.err.set(err)
			sr.fail(err)
		}
		if !sec.keeps {
			select {
			case sr.freeBodies <- sec.body:
			default:
			}
			if sec.rows != nil {
				select {
				case sr.freeRows[sec.table] <- sec.rows:
				default:
				}
			}
		}
		<-sr.inFlight
	}
}

// readPart reads a section of an uncounted image and decodes it in the
// background (waiting for a worker), keeping its place among the
// table's sections.
func (sr *sectionReader) readPart(d *decodedImage, owner int, t Table, size int) error {
	body := make([]byte, size)
	if _, err := io.ReadFull(sr.r, body); err != nil {
		return fmt.Errorf("%w: section: %v", ErrInvalid, err)
	}
	f := imageFields[t]
	d.mu.Lock()
	slot := len(d.parts[t])
	d.parts[t] = append(d.parts[t], nil)
	d.mu.Unlock()
	d.decodes.Add(1)
	sr.workers <- struct{}{}
	go func() {
		defer func() { <-sr.workers; d.decodes.Done() }()
		var part any
		var err error
		if sr.version == 2 {
			part, err = f.decodeGob(body)
		} else {
			part, err = f.decode(body)
		}
		if err != nil {
			d.err.set(fmt.Errorf("%w: %s: %v", ErrInvalid, sr.h.ReadModels[owner].ReadModel, err))
			return
		}
		d.mu.Lock()
		d.parts[t][slot] = part
		d.mu.Unlock()
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

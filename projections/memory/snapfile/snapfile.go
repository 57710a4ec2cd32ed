// Package snapfile is the embedded read models' snapshot file: a clear JSON
// header naming each read model's place in the log, then the read models' rows
// (Image) in sections of a hand-written row codec, sealed in chunks with a
// data key so that destroying the key shreds the file. It reads the two
// older formats too. The in-memory store (projections/memory) makes and
// restores the images; this package only writes and reads files.
package snapfile

import (
	"bufio"
	"bytes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// snapshotMagic opens every snapshot file; the digit is the format version.
// Version 2 keeps each table of a read model in sections of at most
// sectionRows rows, each an independent gob stream, so a start decodes
// them on every core and restores each read model as soon as its sections are
// decoded. Version 3 has sections of the same kind, each in the
// hand-written row codec (codec.go) instead of gob, which decodes several
// times faster with far less garbage; a section holds any number of rows
// (a write ends one at sectionRows rows or sectionBytes of them). Versions 1 (one gob stream) and 2 are
// still read, and replaced by a file of the current version once the node has
// caught up. Version 4 is version 3 whose read models may say that a nil
// delivery body is in the log (ReadModel.BodiesInLog): a node that reads
// only version 3 would take those bodies for erased ones, so it refuses the
// file (and replays the log) instead.
const snapshotMagic = "PLATFORM-READMODELS-SNAPSHOT-4\n"

// Version is the format Write writes; a restore of an older one is
// replaced by one of this version once the node has caught up.
const Version = 4

// snapshotMagicV3 opens a snapshot of the third format: the row codec, and
// every delivery's body in its row (a nil one erased).
const snapshotMagicV3 = "PLATFORM-READMODELS-SNAPSHOT-3\n"

// snapshotMagicV2 opens a snapshot of the second format (gob sections).
const snapshotMagicV2 = "PLATFORM-READMODELS-SNAPSHOT-2\n"

// snapshotMagicV1 opens a snapshot of the first format (one gob stream).
const snapshotMagicV1 = "PLATFORM-READMODELS-SNAPSHOT-1\n"

// snapshotChunk is how much plaintext one sealed chunk holds.
const snapshotChunk = 1 << 20

// ErrInvalid is returned for a snapshot that must not be used: torn,
// altered, of another format, or sealed with a key that no longer exists.
// The caller falls back to replaying the log.
var ErrInvalid = errors.New("projections/memory/snapfile: snapshot invalid")

// Header describes a snapshot file in clear (it holds no personal
// data): which key seals it and which log position each read model reflects,
// with the id of the event at that position, so a start can check that the
// log still holds exactly that event before it trusts the read model.
type Header struct {
	// KeySubject names the data key (in the personal-data key store) that
	// seals the body; destroying it makes the body unreadable for good.
	KeySubject string      `json:"key_subject"`
	Created    time.Time   `json:"created"`
	ReadModels []ReadModel `json:"families"`
	// Directories are the journaled in-memory projections (app and
	// operator directories, analyzer), by name in ReadModel; Rows counts
	// their journal's positions.
	Directories []ReadModel `json:"directories,omitempty"`
	// Version is the file's format (from its magic, not stored here): a
	// start that restores an older one writes a new one once caught up.
	Version int `json:"-"`
}

// Directory is a journaled projection's place in the log and the
// positions of the events it applied up to there (see projections.Journal).
type Directory struct {
	Name       string
	Checkpoint events.Position
	Positions  []events.Position
}

// ReadModel is one read model's place in the log as a snapshot holds it.
type ReadModel struct {
	ReadModel  projections.ReadModel `json:"family"`
	Checkpoint events.Position       `json:"checkpoint"`
	// EventID is the id of the event at Checkpoint ("" at the log's start).
	EventID string `json:"event_id"`
	Rows    int    `json:"rows"`
	// Tables counts the rows of each table of the read model's image, by
	// the table's index in the file (trailing empty tables left out), so
	// a reader decodes every section straight into its table's place.
	// Files written without it are read by assembling each table from
	// its sections.
	Tables []int `json:"tables,omitempty"`
	// BodiesInLog is the image's (Image.BodiesInLog), which a restore
	// needs before the rows.
	BodiesInLog bool `json:"bodies_in_log,omitempty"`
}

// Write writes images to path atomically: a temporary file beside
// it, sealed in chunks with aead (each chunk bound to the header, its index
// and whether it is the last, so a torn, truncated, reordered or altered
// file fails to open), fsynced, renamed over path, and the directory
// fsynced. A crash leaves either the old file or the new one, never a mix.
// It returns the file's size. pace (when not nil) is called after each
// sealed chunk reached the file and after each part of a lent table's
// section was read and encoded (paceRows rows), so the caller can rest the
// writing goroutine between them.
func Write(path string, h Header, aead cipher.AEAD, images []Image, dirs []Directory, pace func()) (int64, error) {
	return write(path, snapshotMagic, h, aead, images, dirs, pace)
}

func write(path, magic string, h Header, aead cipher.AEAD, images []Image, dirs []Directory, pace func()) (int64, error) {
	if len(h.ReadModels) == len(images) {
		h.ReadModels = slices.Clone(h.ReadModels)
		for i := range images {
			h.ReadModels[i].Tables = tableRows(&images[i])
			h.ReadModels[i].BodiesInLog = images[i].BodiesInLog
		}
	}
	head, err := json.Marshal(h)
	if err != nil {
		return 0, fmt.Errorf("snapshot header: %w", err)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if f != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	var pre []byte
	pre = append(pre, magic...)
	pre = binary.BigEndian.AppendUint32(pre, uint32(len(head)))
	pre = append(pre, head...)
	if _, err := f.Write(pre); err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	// The sealed chunks (a megabyte each) go straight to the file: a
	// buffer in between only copied them once more.
	sw := &sealWriter{w: f, aead: aead, head: head, pace: pace}
	if err := writeSections(sw, images, dirs, pace); err != nil {
		return 0, err
	}
	if err := sw.close(); err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("snapshot: fsync: %w", err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	if err := f.Close(); err != nil {
		f = nil
		os.Remove(tmp)
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	f = nil
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return 0, fmt.Errorf("snapshot: fsync of %s: %w", dir, err)
		}
	}
	return size, nil
}

// ReadHeader reads a snapshot's header alone (the caller then
// fetches its key and calls Read). A missing file is os.ErrNotExist.
func ReadHeader(path string) (Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, err
	}
	defer f.Close()
	h, _, _, err := readHeader(bufio.NewReader(f))
	return h, err
}

// readHeader reads the magic and the header; it returns the format
// version (1 to Version) and the header's bytes, which every chunk is bound to.
func readHeader(r io.Reader) (Header, []byte, int, error) {
	pre := make([]byte, len(snapshotMagic)+4)
	if _, err := io.ReadFull(r, pre); err != nil {
		return Header{}, nil, 0, fmt.Errorf("%w: header: %v", ErrInvalid, err)
	}
	version := Version
	switch string(pre[:len(snapshotMagic)]) {
	case snapshotMagic:
	case snapshotMagicV3:
		version = 3
	case snapshotMagicV2:
		version = 2
	case snapshotMagicV1:
		version = 1
	default:
		return Header{}, nil, 0, fmt.Errorf("%w: not a snapshot of this format", ErrInvalid)
	}
	n := binary.BigEndian.Uint32(pre[len(snapshotMagic):])
	if n > 1<<20 {
		return Header{}, nil, 0, fmt.Errorf("%w: header of %d bytes", ErrInvalid, n)
	}
	head := make([]byte, n)
	if _, err := io.ReadFull(r, head); err != nil {
		return Header{}, nil, 0, fmt.Errorf("%w: header: %v", ErrInvalid, err)
	}
	var h Header
	if err := json.Unmarshal(head, &h); err != nil {
		return Header{}, nil, 0, fmt.Errorf("%w: header: %v", ErrInvalid, err)
	}
	h.Version = version
	if version < 4 {
		for i := range h.ReadModels { // no body of these is in the log
			h.ReadModels[i].BodiesInLog = false
		}
	}
	return h, head, version, nil
}

// Read opens a snapshot with aead and returns its header, the
// read model images (in the header's order) and the directory journals it
// holds; any damage gives ErrInvalid.
func Read(path string, aead cipher.AEAD) (Header, []Image, []Directory, error) {
	byReadModel := map[projections.ReadModel]Image{}
	h, dirs, err := ReadEach(path, aead, collectInto(byReadModel))
	if err != nil {
		return Header{}, nil, nil, err
	}
	images := make([]Image, 0, len(h.ReadModels))
	for _, f := range h.ReadModels {
		images = append(images, byReadModel[f.ReadModel])
	}
	return h, images, dirs, nil
}

// ReadEach opens a snapshot with aead and restores each read model it
// holds through the Restorer begin gives it, a part of a table at a time
// as the file is decoded, on several goroutines at once (the read
// models, and each one's lanes), so a start decodes and restores on
// every core; it returns the header and the directory journals. The
// file's end is checked last: on any error (ErrInvalid for damage, or a
// restorer's own) the caller must drop every read model it restored,
// including those whose restorer ended without an error.
func ReadEach(path string, aead cipher.AEAD, begin Begin) (Header, []Directory, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	h, head, version, err := readHeader(br)
	if err != nil {
		return Header{}, nil, err
	}
	or := &openReader{r: br, aead: aead, head: head}
	var dirs []Directory
	if version == 1 {
		dirs, err = readV1(or, h, begin)
	} else {
		dirs, err = readSections(or, h, version, begin)
	}
	if err != nil {
		return Header{}, nil, err
	}
	// The last chunk must have been read and be marked last: nothing was cut.
	if _, err := or.Read(make([]byte, 1)); err != io.EOF || !or.final {
		return Header{}, nil, fmt.Errorf("%w: body does not end where it should", ErrInvalid)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return Header{}, nil, fmt.Errorf("%w: body does not end where it should", ErrInvalid)
	}
	return h, dirs, nil
}

// readV1 reads the body of a version 1 snapshot: one gob stream of every
// image, then the directories.
func readV1(or *openReader, h Header, begin Begin) ([]Directory, error) {
	dec := gob.NewDecoder(or)
	images := make([]Image, 0, len(h.ReadModels))
	for range h.ReadModels {
		var im Image
		if err := dec.Decode(&im); err != nil {
			return nil, fmt.Errorf("%w: body: %v", ErrInvalid, err)
		}
		images = append(images, im)
	}
	var dirs []Directory
	if err := dec.Decode(&dirs); err != nil {
		return nil, fmt.Errorf("%w: directories: %v", ErrInvalid, err)
	}
	for i, im := range images {
		if im.ReadModel != h.ReadModels[i].ReadModel || im.Checkpoint != h.ReadModels[i].Checkpoint {
			return nil, fmt.Errorf("%w: family %d disagrees with the header", ErrInvalid, i)
		}
	}
	if len(dirs) != len(h.Directories) {
		return nil, fmt.Errorf("%w: directories disagree with the header", ErrInvalid)
	}
	for i, d := range dirs {
		if d.Name != string(h.Directories[i].ReadModel) || d.Checkpoint != h.Directories[i].Checkpoint {
			return nil, fmt.Errorf("%w: directory %d disagrees with the header", ErrInvalid, i)
		}
	}
	for i := range images {
		r, err := begin(h.ReadModels[i], tableRows(&images[i]))
		if err != nil {
			return nil, err
		}
		if err := RestoreWhole(r, &images[i]); err != nil {
			return nil, err
		}
	}
	return dirs, nil
}

// chunkAAD binds a chunk to its file's header, its place and whether it is last.
func chunkAAD(head []byte, index uint64, final bool) []byte {
	aad := make([]byte, 0, len(head)+9)
	aad = append(aad, head...)
	aad = binary.BigEndian.AppendUint64(aad, index)
	if final {
		return append(aad, 1)
	}
	return append(aad, 0)
}

// sealWriter seals what is written to it in chunks: each chunk is its
// length (4 bytes), then nonce and ciphertext. A chunk is sealed in place
// in the one buffer that gathers it (the length, the nonce, then the
// plaintext, with room for the seal's overhead), reused from chunk to
// chunk: a second buffer for the sealed copy was another megabyte of a
// write's garbage.
type sealWriter struct {
	w     io.Writer
	aead  cipher.AEAD
	head  []byte
	buf   []byte // the chunk being gathered: length, nonce, plaintext
	index uint64
	pace  func() // after each chunk written (nil: none)
}

// pre is how many bytes of buf come before the plaintext.
func (s *sealWriter) pre() int { return 4 + s.aead.NonceSize() }

func (s *sealWriter) Write(p []byte) (int, error) {
	n := len(p)
	if s.buf == nil {
		s.buf = make([]byte, s.pre(), s.pre()+snapshotChunk+s.aead.Overhead())
	}
	for len(p) > 0 {
		take := min(s.pre()+snapshotChunk-len(s.buf), len(p))
		s.buf = append(s.buf, p[:take]...)
		p = p[take:]
		if len(s.buf) == s.pre()+snapshotChunk {
			if err := s.flush(false); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (s *sealWriter) flush(final bool) error {
	pre := s.pre()
	if s.buf == nil {
		s.buf = make([]byte, pre, pre+s.aead.Overhead())
	}
	nonce, plain := s.buf[4:pre], s.buf[pre:]
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	sealed := s.aead.Seal(plain[:0], nonce, plain, chunkAAD(s.head, s.index, final))
	binary.BigEndian.PutUint32(s.buf[:4], uint32(len(nonce)+len(sealed)))
	if _, err := s.w.Write(s.buf[:pre+len(sealed)]); err != nil {
		return err
	}
	s.index++
	s.buf = s.buf[:pre]
	if s.pace != nil {
		s.pace()
	}
	return nil
}

// close seals what is left as the final chunk (possibly empty).
func (s *sealWriter) close() error { return s.flush(true) }

// openReader opens the chunks of a sealWriter in order. Like sealWriter
// it reuses its sealed and plaintext buffers from chunk to chunk: a chunk
// is read again only once every byte of the previous one was copied out,
// and a restore otherwise made two chunks of garbage for each one it read
// (twice the snapshot's size).
type openReader struct {
	r      io.Reader
	aead   cipher.AEAD
	head   []byte
	sealed []byte
	plain  []byte
	buf    bytes.Reader
	index  uint64
	final  bool
}

func (o *openReader) Read(p []byte) (int, error) {
	for o.buf.Len() == 0 {
		if o.final {
			return 0, io.EOF
		}
		var n [4]byte
		if _, err := io.ReadFull(o.r, n[:]); err != nil {
			return 0, fmt.Errorf("chunk %d: %w", o.index, io.ErrUnexpectedEOF)
		}
		size := binary.BigEndian.Uint32(n[:])
		if size < uint32(o.aead.NonceSize()+o.aead.Overhead()) || size > snapshotChunk+1024 {
			return 0, fmt.Errorf("chunk %d: bad length %d", o.index, size)
		}
		if cap(o.sealed) < int(size) {
			o.sealed = make([]byte, size)
		}
		sealed := o.sealed[:size]
		if _, err := io.ReadFull(o.r, sealed); err != nil {
			return 0, fmt.Errorf("chunk %d: %w", o.index, io.ErrUnexpectedEOF)
		}
		// Opened into the plaintext buffer, not in place: a chunk that
		// does not open as a middle one is tried again as the last one,
		// and a failed open clears what it wrote.
		nonce, body := sealed[:o.aead.NonceSize()], sealed[o.aead.NonceSize():]
		plain, err := o.aead.Open(o.plain[:0], nonce, body, chunkAAD(o.head, o.index, false))
		if err != nil {
			if plain, err = o.aead.Open(o.plain[:0], nonce, body, chunkAAD(o.head, o.index, true)); err != nil {
				return 0, fmt.Errorf("chunk %d: %w", o.index, err)
			}
			o.final = true
		}
		o.plain = plain
		o.index++
		o.buf.Reset(plain)
	}
	return o.buf.Read(p)
}

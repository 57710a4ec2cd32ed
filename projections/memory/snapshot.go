package memory

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
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// snapshotMagic opens every snapshot file; the digit is the format version.
const snapshotMagic = "PLATFORM-READMODELS-SNAPSHOT-1\n"

// snapshotChunk is how much plaintext one sealed chunk holds.
const snapshotChunk = 1 << 20

// ErrSnapshotInvalid is returned for a snapshot that must not be used: torn,
// altered, of another format, or sealed with a key that no longer exists.
// The caller falls back to replaying the log.
var ErrSnapshotInvalid = errors.New("projections/memory: snapshot invalid")

// SnapshotHeader describes a snapshot file in clear (it holds no personal
// data): which key seals it and which log position each family reflects,
// with the id of the event at that position, so a start can check that the
// log still holds exactly that event before it trusts the family.
type SnapshotHeader struct {
	// KeySubject names the data key (in the personal-data key store) that
	// seals the body; destroying it makes the body unreadable for good.
	KeySubject string           `json:"key_subject"`
	Created    time.Time        `json:"created"`
	Families   []SnapshotFamily `json:"families"`
	// Directories are the journaled in-memory projections (app and
	// operator directories, analyzer), by name in Family; Rows counts
	// their journal's positions.
	Directories []SnapshotFamily `json:"directories,omitempty"`
}

// DirectoryImage is a journaled projection's place in the log and the
// positions of the events it applied up to there (see projections.Journal).
type DirectoryImage struct {
	Name       string
	Checkpoint events.Position
	Positions  []events.Position
}

// SnapshotFamily is one family's place in the log as a snapshot holds it.
type SnapshotFamily struct {
	Family     projections.Family `json:"family"`
	Checkpoint events.Position    `json:"checkpoint"`
	// EventID is the id of the event at Checkpoint ("" at the log's start).
	EventID string `json:"event_id"`
	Rows    int    `json:"rows"`
}

// WriteSnapshot writes images to path atomically: a temporary file beside
// it, sealed in chunks with aead (each chunk bound to the header, its index
// and whether it is the last, so a torn, truncated, reordered or altered
// file fails to open), fsynced, renamed over path, and the directory
// fsynced. A crash leaves either the old file or the new one, never a mix.
// It returns the file's size.
func WriteSnapshot(path string, h SnapshotHeader, aead cipher.AEAD, images []FamilyImage, dirs []DirectoryImage) (int64, error) {
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
	bw := bufio.NewWriterSize(f, 1<<20)
	var pre []byte
	pre = append(pre, snapshotMagic...)
	pre = binary.BigEndian.AppendUint32(pre, uint32(len(head)))
	pre = append(pre, head...)
	if _, err := bw.Write(pre); err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	sw := &sealWriter{w: bw, aead: aead, head: head}
	enc := gob.NewEncoder(sw)
	for i := range images {
		if err := enc.Encode(&images[i]); err != nil {
			return 0, fmt.Errorf("snapshot %s: %w", images[i].Family, err)
		}
	}
	if err := enc.Encode(dirs); err != nil {
		return 0, fmt.Errorf("snapshot directories: %w", err)
	}
	if err := sw.close(); err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	if err := bw.Flush(); err != nil {
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

// ReadSnapshotHeader reads a snapshot's header alone (the caller then
// fetches its key and calls ReadSnapshot). A missing file is os.ErrNotExist.
func ReadSnapshotHeader(path string) (SnapshotHeader, error) {
	f, err := os.Open(path)
	if err != nil {
		return SnapshotHeader{}, err
	}
	defer f.Close()
	h, _, err := readHeader(bufio.NewReader(f))
	return h, err
}

func readHeader(r io.Reader) (SnapshotHeader, []byte, error) {
	pre := make([]byte, len(snapshotMagic)+4)
	if _, err := io.ReadFull(r, pre); err != nil {
		return SnapshotHeader{}, nil, fmt.Errorf("%w: header: %v", ErrSnapshotInvalid, err)
	}
	if string(pre[:len(snapshotMagic)]) != snapshotMagic {
		return SnapshotHeader{}, nil, fmt.Errorf("%w: not a snapshot of this format", ErrSnapshotInvalid)
	}
	n := binary.BigEndian.Uint32(pre[len(snapshotMagic):])
	if n > 1<<20 {
		return SnapshotHeader{}, nil, fmt.Errorf("%w: header of %d bytes", ErrSnapshotInvalid, n)
	}
	head := make([]byte, n)
	if _, err := io.ReadFull(r, head); err != nil {
		return SnapshotHeader{}, nil, fmt.Errorf("%w: header: %v", ErrSnapshotInvalid, err)
	}
	var h SnapshotHeader
	if err := json.Unmarshal(head, &h); err != nil {
		return SnapshotHeader{}, nil, fmt.Errorf("%w: header: %v", ErrSnapshotInvalid, err)
	}
	return h, head, nil
}

// ReadSnapshot opens a snapshot with aead and returns its header, the
// family images and the directory journals it holds; any damage gives
// ErrSnapshotInvalid.
func ReadSnapshot(path string, aead cipher.AEAD) (SnapshotHeader, []FamilyImage, []DirectoryImage, error) {
	f, err := os.Open(path)
	if err != nil {
		return SnapshotHeader{}, nil, nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	h, head, err := readHeader(br)
	if err != nil {
		return SnapshotHeader{}, nil, nil, err
	}
	or := &openReader{r: br, aead: aead, head: head}
	dec := gob.NewDecoder(or)
	images := make([]FamilyImage, 0, len(h.Families))
	for range h.Families {
		var im FamilyImage
		if err := dec.Decode(&im); err != nil {
			return SnapshotHeader{}, nil, nil, fmt.Errorf("%w: body: %v", ErrSnapshotInvalid, err)
		}
		images = append(images, im)
	}
	var dirs []DirectoryImage
	if err := dec.Decode(&dirs); err != nil {
		return SnapshotHeader{}, nil, nil, fmt.Errorf("%w: directories: %v", ErrSnapshotInvalid, err)
	}
	// The last chunk must have been read and be marked last: nothing was cut.
	if _, err := or.Read(make([]byte, 1)); err != io.EOF || !or.final {
		return SnapshotHeader{}, nil, nil, fmt.Errorf("%w: body does not end where it should", ErrSnapshotInvalid)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return SnapshotHeader{}, nil, nil, fmt.Errorf("%w: body does not end where it should", ErrSnapshotInvalid)
	}
	for i, im := range images {
		if im.Family != h.Families[i].Family || im.Checkpoint != h.Families[i].Checkpoint {
			return SnapshotHeader{}, nil, nil, fmt.Errorf("%w: family %d disagrees with the header", ErrSnapshotInvalid, i)
		}
	}
	if len(dirs) != len(h.Directories) {
		return SnapshotHeader{}, nil, nil, fmt.Errorf("%w: directories disagree with the header", ErrSnapshotInvalid)
	}
	for i, d := range dirs {
		if d.Name != string(h.Directories[i].Family) || d.Checkpoint != h.Directories[i].Checkpoint {
			return SnapshotHeader{}, nil, nil, fmt.Errorf("%w: directory %d disagrees with the header", ErrSnapshotInvalid, i)
		}
	}
	return h, images, dirs, nil
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
// length (4 bytes), then nonce and ciphertext.
type sealWriter struct {
	w     io.Writer
	aead  cipher.AEAD
	head  []byte
	buf   []byte
	index uint64
}

func (s *sealWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		take := min(snapshotChunk-len(s.buf), len(p))
		s.buf = append(s.buf, p[:take]...)
		p = p[take:]
		if len(s.buf) == snapshotChunk {
			if err := s.flush(false); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (s *sealWriter) flush(final bool) error {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(s.buf)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	sealed := s.aead.Seal(nonce, nonce, s.buf, chunkAAD(s.head, s.index, final))
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(sealed)))
	if _, err := s.w.Write(n[:]); err != nil {
		return err
	}
	if _, err := s.w.Write(sealed); err != nil {
		return err
	}
	s.index++
	s.buf = s.buf[:0]
	return nil
}

// close seals what is left as the final chunk (possibly empty).
func (s *sealWriter) close() error { return s.flush(true) }

// openReader opens the chunks of a sealWriter in order.
type openReader struct {
	r     io.Reader
	aead  cipher.AEAD
	head  []byte
	buf   *bytes.Reader
	index uint64
	final bool
}

func (o *openReader) Read(p []byte) (int, error) {
	for o.buf == nil || o.buf.Len() == 0 {
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
		sealed := make([]byte, size)
		if _, err := io.ReadFull(o.r, sealed); err != nil {
			return 0, fmt.Errorf("chunk %d: %w", o.index, io.ErrUnexpectedEOF)
		}
		nonce, body := sealed[:o.aead.NonceSize()], sealed[o.aead.NonceSize():]
		plain, err := o.aead.Open(nil, nonce, body, chunkAAD(o.head, o.index, false))
		if err != nil {
			if plain, err = o.aead.Open(nil, nonce, body, chunkAAD(o.head, o.index, true)); err != nil {
				return 0, fmt.Errorf("chunk %d: %w", o.index, err)
			}
			o.final = true
		}
		o.index++
		o.buf = bytes.NewReader(plain)
	}
	return o.buf.Read(p)
}

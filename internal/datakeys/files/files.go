// Package files is the embedded key store backend: an append-only key log
// (keys.log, one JSON line per record) in a directory of the data directory,
// with an index of it in memory.
//
// Durability: a writer appends its lines and then waits for an fsync of the
// log that started after its write (group commit: concurrent first uses, and
// a batch of keys made ahead of use with InsertBatch, share one fsync). A
// record is handed to anyone, including a concurrent Get, only once it is
// durable, so a key is on disk before any event sealed with it is appended.
//
// Deletion stays real although the log is append-only: Destroy appends a
// tombstone (the subject and a time, no key material), overwrites the key's
// line in place with spaces and fsyncs the log, so the sealed key's bytes
// are gone from the file, not only unreferenced. A re-seal (master-key
// rotation) appends the new line, makes it durable, then blanks the old one
// the same way. Open repairs a crash between the two writes (a key line
// followed by its tombstone or a newer line is blanked again), drops a torn
// last line, and compacts the log (rewrite of the live lines to a new file,
// fsync, rename, fsync of the directory) when blanked lines are most of it;
// the old file's blocks then hold only blanks and live keys, never a
// destroyed one. A directory of the previous format (one file per subject
// under subjects/) is moved into the log at Open, and its files are zeroed
// and removed. One process owns the data directory (the event log's lock
// says so).
package files

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/healthtech/partner-open-platform/events/jsoncodec"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
)

const logName = "keys.log"

// compactAfter is the size of blanked lines above which Open compacts a log
// that is mostly blanks.
const compactAfter = 64 << 10

// Store keeps data keys in one append-only log file.
type Store struct {
	dir string

	mu     sync.Mutex // guards everything below but the sync state
	f      *os.File
	size   int64
	index  map[string]*entry
	whole  map[string]datakeys.Record // the records of entries not packed (entry.whole)
	dead   int64                      // bytes of blanked lines
	seq    uint64                     // writes handed out; a write's ticket is seq after it
	broken error                      // a failed fsync: the file's state is unknown, refuse further use

	// loaded is closed once Opening's index is built; loadErr is why it
	// could not be. parsed is the log as read, answering Get until then.
	loaded  chan struct{}
	loadErr error
	parsed  atomic.Pointer[parsedLog]

	smu     sync.Mutex
	cond    *sync.Cond
	synced  uint64 // every ticket up to this is durable
	syncing bool
}

// item is a record to append: a key, or a subject's tombstone.
type item struct {
	rec       datakeys.Record
	destroyed bool
}

// item is what l records.
func (l line) item() item {
	if l.Op == "destroyed" {
		return item{rec: datakeys.Record{Subject: l.Subject}, destroyed: true}
	}
	return item{rec: datakeys.Record{Subject: l.Subject, KeyID: l.KeyID, MasterKeyID: l.MasterKeyID, Sealed: l.Sealed, Created: l.Created}}
}

// line is one record of the log.
type line struct {
	Op          string    `json:"op"` // "key" or "destroyed"
	Subject     string    `json:"subject"`
	KeyID       string    `json:"key_id,omitempty"`
	MasterKeyID string    `json:"master_key_id,omitempty"`
	Sealed      string    `json:"sealed,omitempty"`
	Created     time.Time `json:"created,omitzero"`
	At          time.Time `json:"at,omitzero"`
}

// Open uses (and creates, mode 0700) dir as the key store.
func Open(dir string) (*Store, error) {
	s, err := Opening(dir)
	if err != nil {
		return nil, err
	}
	if err := s.Ready(); err != nil {
		return nil, err
	}
	return s, nil
}

// Opening is Open returning once the log is read and its lines decoded,
// while their index is built (and the log repaired, compacted) on a
// goroutine of its own: a start then restores its read-model snapshot
// meanwhile. Until the index is built, Get answers from the decoded lines
// (the same answer as the index's: a subject's last line decides) and
// every other method waits for it; Ready says when it is built, or why it
// could not be (a write of the repair or compaction failed; the store is
// then closed). A log with a line the index would refuse (damaged, of an
// unknown record), or a directory of the previous format to move in, is
// indexed before Opening returns, so its error comes from Opening itself.
func Opening(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	s := &Store{dir: dir, index: map[string]*entry{}, whole: map[string]datakeys.Record{}, loaded: make(chan struct{})}
	s.cond = sync.NewCond(&s.smu)
	b, err := s.read()
	if err != nil {
		return nil, err
	}
	lines := parseLines(b[:s.size])
	if _, err := os.Stat(filepath.Join(dir, "subjects")); lines.clean && errors.Is(err, os.ErrNotExist) {
		s.parsed.Store(&lines)
		go s.finish(lines)
		return s, nil
	}
	s.finish(lines)
	if err := s.Ready(); err != nil {
		return nil, err
	}
	return s, nil
}

// Ready waits until the index is built, and returns why it could not be.
func (s *Store) Ready() error {
	<-s.loaded
	return s.loadErr
}

// finish indexes the decoded log, repairs it, compacts it if needed and
// moves a directory of the previous format in, then stops Get's answers
// from the decoded lines.
func (s *Store) finish(lines parsedLog) {
	err := s.load(lines)
	if err == nil {
		err = s.migrate()
	}
	if err != nil {
		s.f.Close()
		s.f = nil
		s.broken = err
	}
	s.loadErr = err
	s.parsed.Store(nil)
	close(s.loaded)
}

func (s *Store) path() string { return filepath.Join(s.dir, logName) }

// read opens the log and reads it whole, dropping a torn last line.
func (s *Store) read() ([]byte, error) {
	f, err := os.OpenFile(s.path(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	if err := syncDir(s.dir); err != nil { // the log's own directory entry
		f.Close()
		return nil, fmt.Errorf("keys: %w", err)
	}
	// One read into a buffer of the file's size: io.ReadAll would grow it
	// step by step (tens of MB copied several times per person-heavy log).
	var b []byte
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		b = make([]byte, 0, fi.Size()+1)
	}
	b, err = readAll(f, b)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("keys: read %s: %w", logName, err)
	}
	end := int64(bytes.LastIndexByte(b, '\n') + 1)
	if end < int64(len(b)) { // a torn last line was never acknowledged
		if err := f.Truncate(end); err != nil {
			f.Close()
			return nil, fmt.Errorf("keys: truncate torn line: %w", err)
		}
	}
	s.f, s.size = f, end
	return b, nil
}

// load indexes the log's decoded lines, repairs the log and compacts it
// if needed.
func (s *Store) load(lines parsedLog) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.index = make(map[string]*entry, lines.lines)
	var stale [][2]int64 // key lines superseded by a later line, to blank again
	for _, part := range lines.parts {
		for i := range part {
			r := &part[i]
			if r.blank {
				s.dead += int64(r.n) + 1
				continue
			}
			if !lines.clean { // a clean log's lines were checked as they were decoded
				if r.err != nil || !datakeys.ValidSubject(r.subject) {
					return fmt.Errorf("keys: %s is corrupt at byte %d", logName, r.off)
				}
				if op := r.op(); op != "key" && op != "destroyed" {
					return fmt.Errorf("keys: %s has an unknown record %q at byte %d", logName, op, r.off)
				}
			}
			if old := s.index[r.subject]; old != nil && old.n > 0 {
				stale = append(stale, [2]int64{old.off, int64(old.n)})
			}
			s.set(r.item(), r.e)
		}
	}
	for _, sp := range stale {
		if err := s.blank(sp[0], sp[1]); err != nil {
			return err
		}
	}
	if len(stale) > 0 {
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("keys: %w", err)
		}
	}
	if s.dead > compactAfter && s.dead*2 > s.size {
		return s.compact()
	}
	return nil
}

// compact rewrites the live lines to a new log and renames it into place.
func (s *Store) compact() error {
	subjects := make([]string, 0, len(s.index))
	for subj := range s.index {
		subjects = append(subjects, subj)
	}
	sort.Strings(subjects)
	var buf bytes.Buffer
	index := make(map[string]*entry, len(s.index))
	for _, subj := range subjects {
		e := *s.index[subj]
		off := int64(buf.Len())
		b := encodeLine(item{rec: s.record(subj, &e), destroyed: e.destroyed})
		buf.Write(b)
		buf.WriteByte('\n')
		if !e.destroyed {
			e.off, e.n = off, int32(len(b))
		}
		e.ticket = 0
		index[subj] = &e
	}
	tmp := s.path() + ".tmp"
	if err := writeDurably(tmp, buf.Bytes()); err != nil {
		return err
	}
	if err := os.Rename(tmp, s.path()); err != nil {
		return fmt.Errorf("keys: compact: %w", err)
	}
	if err := syncDir(s.dir); err != nil {
		return fmt.Errorf("keys: compact: %w", err)
	}
	f, err := os.OpenFile(s.path(), os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	s.f.Close()
	s.f, s.index, s.size, s.dead = f, index, int64(buf.Len()), 0
	return nil
}

// legacyFile is a subject file of the previous format.
type legacyFile struct {
	KeyID       string     `json:"key_id,omitempty"`
	MasterKeyID string     `json:"master_key_id,omitempty"`
	Sealed      string     `json:"sealed,omitempty"`
	Created     time.Time  `json:"created,omitzero"`
	DestroyedAt *time.Time `json:"destroyed_at,omitempty"`
}

// migrate moves a subjects/ directory of the previous format into the log,
// then zeroes and removes its files.
func (s *Store) migrate() error {
	legacy := filepath.Join(s.dir, "subjects")
	entries, err := os.ReadDir(legacy)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	var items []item
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".tmp") || !datakeys.ValidSubject(name) {
			continue
		}
		if _, ok := s.index[name]; ok {
			continue // moved by an earlier, interrupted migration
		}
		b, err := os.ReadFile(filepath.Join(legacy, name))
		if err != nil {
			return fmt.Errorf("keys: %w", err)
		}
		var lf legacyFile
		if err := json.Unmarshal(b, &lf); err != nil {
			return fmt.Errorf("keys: subject file %s: %w", name, err)
		}
		items = append(items, item{rec: datakeys.Record{Subject: name, KeyID: lf.KeyID, MasterKeyID: lf.MasterKeyID, Sealed: lf.Sealed, Created: lf.Created}, destroyed: lf.DestroyedAt != nil})
	}
	if len(items) > 0 {
		if _, err := s.appendLines(items); err != nil {
			return err
		}
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("keys: %w", err)
		}
	}
	for _, e := range entries {
		p := filepath.Join(legacy, e.Name())
		if err := overwrite(p); err != nil {
			return err
		}
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("keys: %w", err)
		}
	}
	if err := os.Remove(legacy); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	return syncDir(s.dir)
}

func encodeLine(it item) []byte {
	if it.destroyed {
		return line{Op: "destroyed", Subject: it.rec.Subject, At: time.Now().UTC()}.encode()
	}
	r := it.rec
	return line{Op: "key", Subject: r.Subject, KeyID: r.KeyID, MasterKeyID: r.MasterKeyID, Sealed: r.Sealed, Created: r.Created}.encode()
}

// encode is json.Marshal(l), written field by field: every new person's
// key is a line (a register makes one), which json.Marshal makes with
// three allocations and five times the CPU. A time json.Marshal refuses (a year past 9999) is
// left to it, so the bytes are always its own.
func (l line) encode() []byte {
	w := jsoncodec.HTML
	b := make([]byte, 0, 160+len(l.Subject)+len(l.KeyID)+len(l.MasterKeyID)+len(l.Sealed)) // the keys, two times and the strings
	b = w.String(b, `{"op":`, l.Op)
	b = w.String(b, `,"subject":`, l.Subject)
	if l.KeyID != "" {
		b = w.String(b, `,"key_id":`, l.KeyID)
	}
	if l.MasterKeyID != "" {
		b = w.String(b, `,"master_key_id":`, l.MasterKeyID)
	}
	if l.Sealed != "" {
		b = w.String(b, `,"sealed":`, l.Sealed)
	}
	ok := true
	if !l.Created.IsZero() {
		b, ok = jsoncodec.Time(b, `,"created":`, l.Created)
	}
	if ok && !l.At.IsZero() {
		b, ok = jsoncodec.Time(b, `,"at":`, l.At)
	}
	if !ok {
		b, _ := json.Marshal(l) // a time out of JSON's range, which it refuses
		return b
	}
	return append(b, '}')
}

// appendLines writes items' lines at the end of the log (s.mu held) and
// indexes them; it returns the write's ticket.
func (s *Store) appendLines(items []item) (uint64, error) {
	if s.broken != nil {
		return 0, s.broken
	}
	lines := make([][]byte, len(items))
	n := 0
	for i, it := range items {
		lines[i] = encodeLine(it)
		n += len(lines[i]) + 1
	}
	var buf bytes.Buffer
	buf.Grow(n) // one allocation for a batch of many keys' lines
	offs := make([]int64, len(lines))
	for i, l := range lines {
		offs[i] = s.size + int64(buf.Len())
		buf.Write(l)
		buf.WriteByte('\n')
	}
	if _, err := s.f.WriteAt(buf.Bytes(), s.size); err != nil {
		s.broken = fmt.Errorf("keys: write %s: %w", logName, err)
		return 0, s.broken
	}
	s.size += int64(buf.Len())
	s.seq++
	for i, it := range items {
		s.set(it, newEntry(it, offs[i], int64(len(lines[i])), s.seq))
	}
	return s.seq, nil
}

// newEntry makes the index entry of it, whose line is at off (n bytes)
// and was made by the write with ticket t.
func newEntry(it item, off, n int64, t uint64) *entry {
	e := &entry{ticket: t, destroyed: it.destroyed}
	if !it.destroyed {
		e.off, e.n = off, int32(n)
		e.whole = !e.pack(it.rec)
	}
	return e
}

// set indexes e, made by newEntry from it (s.mu held, or at load).
func (s *Store) set(it item, e *entry) {
	subject := it.rec.Subject
	delete(s.whole, subject)
	if e.whole {
		s.whole[subject] = it.rec
	}
	s.index[subject] = e
}

// record returns the record of subject's entry e (s.mu held).
func (s *Store) record(subject string, e *entry) datakeys.Record {
	switch {
	case e.destroyed:
		return datakeys.Record{Subject: subject}
	case e.whole:
		return s.whole[subject]
	}
	return e.record(subject)
}

// blank overwrites a line in place with spaces (s.mu held, or at load).
func (s *Store) blank(off, n int64) error {
	if _, err := s.f.WriteAt(bytes.Repeat([]byte{' '}, int(n)), off); err != nil {
		s.broken = fmt.Errorf("keys: blank a line of %s: %w", logName, err)
		return s.broken
	}
	s.dead += n + 1
	return nil
}

// durable waits until the write with ticket t is on disk, starting an fsync
// if none that covers it is running (group commit).
func (s *Store) durable(t uint64) error {
	s.smu.Lock()
	defer s.smu.Unlock()
	for s.synced < t {
		if s.syncing {
			s.cond.Wait()
			continue
		}
		s.syncing = true
		s.mu.Lock()
		target, broken, f := s.seq, s.broken, s.f
		s.mu.Unlock()
		if broken != nil {
			s.syncing = false
			s.cond.Broadcast()
			return broken
		}
		s.smu.Unlock()
		err := f.Sync()
		s.smu.Lock()
		s.syncing = false
		s.cond.Broadcast()
		if err != nil {
			s.mu.Lock()
			s.broken = fmt.Errorf("keys: fsync %s: %w", logName, err)
			err = s.broken
			s.mu.Unlock()
			return err
		}
		if target > s.synced {
			s.synced = target
		}
	}
	return nil
}

// lookup returns the subject's record once it is durable:
// datakeys.ErrNotFound or ErrDestroyed when it has none.
func (s *Store) lookup(subject string) (datakeys.Record, error) {
	s.mu.Lock()
	e := s.index[subject]
	if e == nil {
		s.mu.Unlock()
		return datakeys.Record{}, datakeys.ErrNotFound
	}
	rec, destroyed, t := s.record(subject, e), e.destroyed, e.ticket
	s.mu.Unlock()
	if err := s.durable(t); err != nil {
		return datakeys.Record{}, err
	}
	if destroyed {
		return datakeys.Record{}, datakeys.ErrDestroyed
	}
	return rec, nil
}

// Insert implements datakeys.Backend.
func (s *Store) Insert(ctx context.Context, rec datakeys.Record) (datakeys.Record, error) {
	out, err := s.InsertBatch(ctx, []datakeys.Record{rec})
	if err != nil {
		return datakeys.Record{}, err
	}
	if out[0].KeyID == "" {
		return datakeys.Record{}, datakeys.ErrDestroyed
	}
	return out[0], nil
}

// InsertBatch implements datakeys.Backend: every new record is appended in one
// write and made durable by one fsync.
func (s *Store) InsertBatch(ctx context.Context, recs []datakeys.Record) ([]datakeys.Record, error) {
	if err := s.Ready(); err != nil {
		return nil, err
	}
	for _, r := range recs {
		if !datakeys.ValidSubject(r.Subject) {
			return nil, fmt.Errorf("%w: %q", datakeys.ErrInvalidSubject, r.Subject)
		}
	}
	out := make([]datakeys.Record, len(recs))
	var items []item
	s.mu.Lock()
	var wait uint64
	for i, r := range recs {
		if e := s.index[r.Subject]; e != nil {
			if !e.destroyed {
				out[i] = s.record(r.Subject, e)
			}
			wait = max(wait, e.ticket)
			continue
		}
		items = append(items, item{rec: r})
		out[i] = r
	}
	if len(items) > 0 {
		t, err := s.appendLines(items)
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		wait = t
	}
	s.mu.Unlock()
	if err := s.durable(wait); err != nil {
		return nil, err
	}
	return out, nil
}

// Get implements datakeys.Backend; while Opening's index is built, it
// answers from the log's decoded lines.
func (s *Store) Get(ctx context.Context, subject string) (datakeys.Record, error) {
	if !datakeys.ValidSubject(subject) {
		return datakeys.Record{}, datakeys.ErrInvalidSubject
	}
	if lines := s.parsed.Load(); lines != nil {
		return lines.get(subject)
	}
	if err := s.Ready(); err != nil {
		return datakeys.Record{}, err
	}
	return s.lookup(subject)
}

// GetByKeyID implements datakeys.Backend.
func (s *Store) GetByKeyID(ctx context.Context, keyID string) (datakeys.Record, error) {
	subject, ok := datakeys.SubjectOf(keyID)
	if !ok || !datakeys.ValidSubject(subject) {
		return datakeys.Record{}, datakeys.ErrNotFound
	}
	rec, err := s.Get(ctx, subject)
	if errors.Is(err, datakeys.ErrDestroyed) || err == nil && rec.KeyID != keyID {
		return datakeys.Record{}, datakeys.ErrNotFound
	}
	return rec, err
}

// Destroy implements datakeys.Backend: a tombstone is appended, the key's line
// is overwritten in place with spaces, and one fsync makes both durable.
func (s *Store) Destroy(ctx context.Context, subject string) error {
	if !datakeys.ValidSubject(subject) {
		return datakeys.ErrInvalidSubject
	}
	if err := s.Ready(); err != nil {
		return err
	}
	s.mu.Lock()
	cur := s.index[subject]
	if cur != nil && cur.destroyed {
		t := cur.ticket
		s.mu.Unlock()
		return s.durable(t)
	}
	var off, n int64
	if cur != nil {
		off, n = cur.off, int64(cur.n)
	}
	t, err := s.appendLines([]item{{rec: datakeys.Record{Subject: subject}, destroyed: true}})
	if err == nil && cur != nil {
		err = s.blank(off, n)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.durable(t)
}

// Update implements datakeys.Backend: the new line is made durable before the
// old one is blanked, so a crash never loses the key.
func (s *Store) Update(ctx context.Context, fromMaster string, rec datakeys.Record) error {
	if err := s.Ready(); err != nil {
		return err
	}
	s.mu.Lock()
	cur := s.index[rec.Subject]
	if cur == nil || cur.destroyed {
		s.mu.Unlock()
		return nil
	}
	if was := s.record(rec.Subject, cur); was.KeyID != rec.KeyID || was.MasterKeyID != fromMaster {
		s.mu.Unlock()
		return nil
	}
	old := *cur
	t, err := s.appendLines([]item{{rec: rec}})
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if err := s.durable(t); err != nil {
		return err
	}
	s.mu.Lock()
	s.seq++
	t = s.seq
	err = s.blank(old.off, int64(old.n))
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.durable(t)
}

// List implements datakeys.Backend.
func (s *Store) List(ctx context.Context, fn func(datakeys.Record) error) error {
	if err := s.Ready(); err != nil {
		return err
	}
	s.mu.Lock()
	var recs []datakeys.Record
	var wait uint64
	for subj, e := range s.index {
		if !e.destroyed {
			recs = append(recs, s.record(subj, e))
			wait = max(wait, e.ticket)
		}
	}
	s.mu.Unlock()
	if err := s.durable(wait); err != nil {
		return err
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].KeyID < recs[j].KeyID })
	for _, r := range recs {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// Close implements datakeys.Backend.
func (s *Store) Close() error {
	<-s.loaded
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	if s.broken == nil {
		s.broken = errors.New("keys: the key store is closed")
	}
	return err
}

// writeDurably writes b to a new file at path (mode 0600) and fsyncs it.
func writeDurably(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	w := bufio.NewWriter(f)
	_, err = w.Write(b)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	return nil
}

// overwrite fills a file with zeros in place and syncs it.
func overwrite(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	info, err := f.Stat()
	if err == nil {
		_, err = f.WriteAt(make([]byte, info.Size()), 0)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("keys: overwrite %s: %w", filepath.Base(path), err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// readAll reads r to its end, appending to b (with room for it all, one read).
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// LogName is the key log's file name in the store's directory.
const LogName = logName

// Backup writes the key log as it stands to w. Writers wait meanwhile, so
// no line in the copy is half appended or half blanked; w should be fast
// (a local file). Records appended but not yet durable may be in the copy:
// their events are not in the log yet, so a restore holds an unused key.
func (s *Store) Backup(w io.Writer) (int64, error) {
	if err := s.Ready(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return 0, s.broken
	}
	return io.Copy(w, io.NewSectionReader(s.f, 0, s.size))
}

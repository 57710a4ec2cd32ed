// Package files is the embedded key store backend: one small file per
// subject in a directory of the data directory, so that destroying a key can
// really remove its bytes (a bbolt file is copy-on-write and would keep old
// pages until they are reused).
//
// subjects/<subject> holds the subject's record (key id, master key id, the
// sealed key) or, once destroyed, only the time of destruction. A key id
// names its subject (keys.SubjectOf), so a lookup by key id is one file read.
// Creating a key writes a temporary file, fsyncs it, renames it into place
// and fsyncs the directory: the key is durable before any event sealed with
// it is appended. Destroy overwrites the file with zeros, fsyncs it, and
// replaces it with the tombstone (fsync, rename, fsync of the directory).
// One process owns the data directory (the event log's lock says so); writers
// of one subject are serialised by a striped lock, other subjects proceed in
// parallel.
package files

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/keys"
)

// Store keeps data keys as files under one directory.
type Store struct {
	dir   string
	locks [64]sync.Mutex
	dsync dirSyncer
}

type subjectFile struct {
	KeyID       string     `json:"key_id,omitempty"`
	MasterKeyID string     `json:"master_key_id,omitempty"`
	Sealed      string     `json:"sealed,omitempty"`
	Created     time.Time  `json:"created,omitzero"`
	DestroyedAt *time.Time `json:"destroyed_at,omitempty"`
}

// Open uses (and creates, mode 0700) dir as the key store.
func Open(dir string) (*Store, error) {
	for _, d := range []string{dir, filepath.Join(dir, "subjects")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("keys: %w", err)
		}
	}
	st := &Store{dir: dir}
	st.dsync.cond = sync.NewCond(&st.dsync.mu)
	return st, nil
}

func (s *Store) lock(subject string) func() {
	h := fnv.New32a()
	h.Write([]byte(subject))
	m := &s.locks[h.Sum32()%uint32(len(s.locks))]
	m.Lock()
	return m.Unlock
}

func (s *Store) path(subject string) string { return filepath.Join(s.dir, "subjects", subject) }

// read returns the subject's record, keys.ErrNotFound or keys.ErrDestroyed.
func (s *Store) read(subject string) (keys.Record, error) {
	b, err := os.ReadFile(s.path(subject))
	if errors.Is(err, os.ErrNotExist) {
		return keys.Record{}, keys.ErrNotFound
	}
	if err != nil {
		return keys.Record{}, err
	}
	var f subjectFile
	if err := json.Unmarshal(b, &f); err != nil {
		return keys.Record{}, fmt.Errorf("keys: subject file %s: %w", subject, err)
	}
	if f.DestroyedAt != nil {
		return keys.Record{}, keys.ErrDestroyed
	}
	return keys.Record{Subject: subject, KeyID: f.KeyID, MasterKeyID: f.MasterKeyID, Sealed: f.Sealed, Created: f.Created}, nil
}

func (s *Store) write(rec keys.Record) error {
	return s.writeFile(s.path(rec.Subject), subjectFile{KeyID: rec.KeyID, MasterKeyID: rec.MasterKeyID, Sealed: rec.Sealed, Created: rec.Created})
}

// Insert implements keys.Backend.
func (s *Store) Insert(ctx context.Context, rec keys.Record) (keys.Record, error) {
	if !keys.ValidSubject(rec.Subject) {
		return keys.Record{}, keys.ErrInvalidSubject
	}
	defer s.lock(rec.Subject)()
	cur, err := s.read(rec.Subject)
	if !errors.Is(err, keys.ErrNotFound) {
		return cur, err
	}
	if err := s.write(rec); err != nil {
		return keys.Record{}, err
	}
	return rec, nil
}

// Get implements keys.Backend.
func (s *Store) Get(ctx context.Context, subject string) (keys.Record, error) {
	if !keys.ValidSubject(subject) {
		return keys.Record{}, keys.ErrInvalidSubject
	}
	defer s.lock(subject)()
	return s.read(subject)
}

// GetByKeyID implements keys.Backend.
func (s *Store) GetByKeyID(ctx context.Context, keyID string) (keys.Record, error) {
	subject, ok := keys.SubjectOf(keyID)
	if !ok || !keys.ValidSubject(subject) {
		return keys.Record{}, keys.ErrNotFound
	}
	rec, err := s.Get(ctx, subject)
	if errors.Is(err, keys.ErrDestroyed) || err == nil && rec.KeyID != keyID {
		return keys.Record{}, keys.ErrNotFound
	}
	return rec, err
}

// Destroy implements keys.Backend: the file is overwritten with zeros and
// synced before the tombstone replaces it.
func (s *Store) Destroy(ctx context.Context, subject string) error {
	if !keys.ValidSubject(subject) {
		return keys.ErrInvalidSubject
	}
	defer s.lock(subject)()
	_, err := s.read(subject)
	if errors.Is(err, keys.ErrDestroyed) {
		return nil
	}
	if err != nil && !errors.Is(err, keys.ErrNotFound) {
		return err
	}
	if err == nil {
		if err := overwrite(s.path(subject)); err != nil {
			return err
		}
	}
	now := time.Now().UTC()
	return s.writeFile(s.path(subject), subjectFile{DestroyedAt: &now})
}

// Update implements keys.Backend.
func (s *Store) Update(ctx context.Context, fromMaster string, rec keys.Record) error {
	defer s.lock(rec.Subject)()
	cur, err := s.read(rec.Subject)
	if err != nil {
		return err
	}
	if cur.KeyID != rec.KeyID || cur.MasterKeyID != fromMaster {
		return nil
	}
	return s.write(rec)
}

// List implements keys.Backend.
func (s *Store) List(ctx context.Context, fn func(keys.Record) error) error {
	entries, err := os.ReadDir(filepath.Join(s.dir, "subjects"))
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") || !keys.ValidSubject(e.Name()) {
			continue
		}
		rec, err := s.Get(ctx, e.Name())
		if errors.Is(err, keys.ErrNotFound) || errors.Is(err, keys.ErrDestroyed) {
			continue
		}
		if err != nil {
			return err
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	return nil
}

// Close implements keys.Backend.
func (s *Store) Close() error { return nil }

// writeFile replaces path atomically and durably with v as JSON (mode 0600).
func (s *Store) writeFile(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("keys: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("keys: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	return s.dsync.sync(filepath.Dir(path))
}

// dirSyncer coalesces directory fsyncs: a writer whose rename is done waits
// for the first fsync that starts after it, so concurrent first uses of
// different subjects share one (all files live in one directory).
type dirSyncer struct {
	mu      sync.Mutex
	cond    *sync.Cond
	seq     uint64 // tickets handed out
	synced  uint64 // every ticket below this is durable
	syncing bool
	err     error
}

func (d *dirSyncer) sync(dir string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	ticket := d.seq
	d.seq++
	for d.syncing {
		d.cond.Wait()
		if d.synced > ticket {
			return d.err
		}
	}
	if d.synced > ticket {
		return d.err
	}
	d.syncing = true
	target := d.seq
	d.mu.Unlock()
	err := syncDir(dir)
	d.mu.Lock()
	d.syncing, d.err = false, err
	if err == nil {
		d.synced = target
	}
	d.cond.Broadcast()
	return err
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

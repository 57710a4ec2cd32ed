// Package files is the embedded key store backend: one small file per
// subject and one per data key in a directory of the data directory, so that
// destroying a key can really remove its bytes (a bbolt file is
// copy-on-write and would keep old pages until they are reused).
//
// Layout under the directory:
//
//	subjects/<subject>   {"key_id":...} or {"destroyed_at":...}
//	data/<key id>        the record: subject, key id, master key id, sealed key
//
// Destroy overwrites the data file with zeros, fsyncs it, removes it, and
// fsyncs the directory, then marks the subject destroyed. One process owns
// the data directory (the event log's lock says so); a mutex orders writers.
package files

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/keys"
)

// Store keeps data keys as files under one directory.
type Store struct {
	dir string
	mu  sync.Mutex
}

type subjectFile struct {
	KeyID       string     `json:"key_id,omitempty"`
	DestroyedAt *time.Time `json:"destroyed_at,omitempty"`
}

type dataFile struct {
	Subject     string    `json:"subject"`
	KeyID       string    `json:"key_id"`
	MasterKeyID string    `json:"master_key_id"`
	Sealed      string    `json:"sealed"`
	Created     time.Time `json:"created"`
}

// Open uses (and creates, mode 0700) dir as the key store.
func Open(dir string) (*Store, error) {
	for _, d := range []string{dir, filepath.Join(dir, "subjects"), filepath.Join(dir, "data")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("keys: %w", err)
		}
	}
	return &Store{dir: dir}, nil
}

func (s *Store) subjectPath(subject string) string { return filepath.Join(s.dir, "subjects", subject) }
func (s *Store) dataPath(keyID string) string      { return filepath.Join(s.dir, "data", keyID) }

func (s *Store) readSubject(subject string) (subjectFile, error) {
	var sf subjectFile
	b, err := os.ReadFile(s.subjectPath(subject))
	if errors.Is(err, os.ErrNotExist) {
		return sf, keys.ErrNotFound
	}
	if err != nil {
		return sf, err
	}
	if err := json.Unmarshal(b, &sf); err != nil {
		return sf, fmt.Errorf("keys: subject file %s: %w", subject, err)
	}
	if sf.DestroyedAt != nil {
		return sf, keys.ErrDestroyed
	}
	return sf, nil
}

func (s *Store) readData(keyID string) (keys.Record, error) {
	if !keys.ValidSubject(keyID) {
		return keys.Record{}, keys.ErrNotFound
	}
	b, err := os.ReadFile(s.dataPath(keyID))
	if errors.Is(err, os.ErrNotExist) {
		return keys.Record{}, keys.ErrNotFound
	}
	if err != nil {
		return keys.Record{}, err
	}
	var d dataFile
	if err := json.Unmarshal(b, &d); err != nil {
		return keys.Record{}, fmt.Errorf("keys: data file %s: %w", keyID, err)
	}
	return keys.Record{Subject: d.Subject, KeyID: d.KeyID, MasterKeyID: d.MasterKeyID, Sealed: d.Sealed, Created: d.Created}, nil
}

// Insert implements keys.Backend.
func (s *Store) Insert(ctx context.Context, rec keys.Record) (keys.Record, error) {
	if !keys.ValidSubject(rec.Subject) || !keys.ValidSubject(rec.KeyID) {
		return keys.Record{}, keys.ErrInvalidSubject
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sf, err := s.readSubject(rec.Subject)
	if err == nil {
		return s.readData(sf.KeyID)
	}
	if !errors.Is(err, keys.ErrNotFound) {
		return keys.Record{}, err
	}
	if err := s.writeData(rec); err != nil {
		return keys.Record{}, err
	}
	if err := writeFile(s.subjectPath(rec.Subject), subjectFile{KeyID: rec.KeyID}); err != nil {
		return keys.Record{}, err
	}
	return rec, nil
}

func (s *Store) writeData(rec keys.Record) error {
	return writeFile(s.dataPath(rec.KeyID), dataFile{Subject: rec.Subject, KeyID: rec.KeyID,
		MasterKeyID: rec.MasterKeyID, Sealed: rec.Sealed, Created: rec.Created})
}

// Get implements keys.Backend.
func (s *Store) Get(ctx context.Context, subject string) (keys.Record, error) {
	if !keys.ValidSubject(subject) {
		return keys.Record{}, keys.ErrInvalidSubject
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sf, err := s.readSubject(subject)
	if err != nil {
		return keys.Record{}, err
	}
	return s.readData(sf.KeyID)
}

// GetByKeyID implements keys.Backend.
func (s *Store) GetByKeyID(ctx context.Context, keyID string) (keys.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readData(keyID)
}

// Destroy implements keys.Backend: the data file is overwritten with zeros,
// synced and removed before the subject is marked destroyed.
func (s *Store) Destroy(ctx context.Context, subject string) error {
	if !keys.ValidSubject(subject) {
		return keys.ErrInvalidSubject
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sf, err := s.readSubject(subject)
	if errors.Is(err, keys.ErrDestroyed) {
		return nil
	}
	if err != nil && !errors.Is(err, keys.ErrNotFound) {
		return err
	}
	if sf.KeyID != "" {
		if err := shred(s.dataPath(sf.KeyID)); err != nil {
			return err
		}
		if err := syncDir(filepath.Join(s.dir, "data")); err != nil {
			return err
		}
	}
	now := time.Now().UTC()
	return writeFile(s.subjectPath(subject), subjectFile{DestroyedAt: &now})
}

// Update implements keys.Backend.
func (s *Store) Update(ctx context.Context, fromMaster string, rec keys.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.readData(rec.KeyID)
	if err != nil {
		return err
	}
	if cur.MasterKeyID != fromMaster {
		return nil
	}
	// Replaced atomically (a crash must not lose the key); the old form was
	// sealed by the old master key, which is what a rotation retires.
	return s.writeData(rec)
}

// List implements keys.Backend.
func (s *Store) List(ctx context.Context, fn func(keys.Record) error) error {
	s.mu.Lock()
	entries, err := os.ReadDir(filepath.Join(s.dir, "data"))
	s.mu.Unlock()
	if err != nil {
		return err
	}
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".tmp" {
			continue
		}
		s.mu.Lock()
		rec, err := s.readData(e.Name())
		s.mu.Unlock()
		if errors.Is(err, keys.ErrNotFound) {
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
func writeFile(path string, v any) error {
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
	return syncDir(filepath.Dir(path))
}

// shred overwrites a file with zeros in place, syncs, and removes it.
func shred(path string) error {
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
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("keys: %w", err)
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

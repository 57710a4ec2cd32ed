// Package bolt keeps an embedded node's replay guard (scheme H nonces and
// scheme M signature bindings, nonces.Store) in a bbolt file in
// the data directory, so that a restart inside the timestamp window does
// not forget them and let a captured request be replayed. A cluster keeps
// them in Postgres instead (projections/postgres), shared by every node.
package bolt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// LockTimeout is how long Open waits for another process to release the
// file; two nodes cannot share one data directory.
const LockTimeout = 5 * time.Second

// Pruning: one insert in pruneEvery deletes up to pruneBatch expired
// entries in its own transaction, oldest first, so the file stays near the
// entries still valid (ten times what those inserts add).
const (
	pruneEvery = 100
	pruneBatch = 1000
)

var (
	entriesBucket = []byte("entries") // entry key -> expiry (8 bytes) + value
	expiryBucket  = []byte("expiry")  // expiry (8 bytes) + entry key -> nothing: pruning order
)

// Nonces is the durable replay guard of one embedded node.
type Nonces struct {
	db      *bbolt.DB
	inserts uint64 // guarded by bbolt's single writer

	mu      sync.Mutex
	queue   []*binding // waiting for the next group transaction
	leading bool       // a caller is recording groups (lead)
	now     func() time.Time
	stop    chan struct{}
	stopped chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// Open opens (creating) the file at path.
func Open(path string) (*Nonces, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: LockTimeout})
	if err != nil {
		return nil, fmt.Errorf("internal/nonces/bolt: open %s: %w", path, err)
	}
	// Commits are written to the file but not fsynced one by one (an fsync
	// costs about 10 ms here, on every signed request); sync flushes them
	// every SyncEvery. A process that crashes or restarts loses nothing (the
	// writes are in the OS's cache); an OS crash or power loss may lose the
	// last SyncEvery of nonces.
	db.NoSync = true
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{entriesBucket, expiryBucket} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("internal/nonces/bolt: prepare %s: %w", path, err)
	}
	n := &Nonces{db: db, now: time.Now, stop: make(chan struct{}), stopped: make(chan struct{})}
	go n.sync()
	return n, nil
}

// SyncEvery is how often the file is flushed to disk.
const SyncEvery = time.Second

func (n *Nonces) sync() {
	defer close(n.stopped)
	t := time.NewTicker(SyncEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			_ = n.db.Sync() // a failed flush is retried at the next tick and at Close
		case <-n.stop:
			return
		}
	}
}

// Close flushes and releases the file; later calls return the first's
// answer, and every use after it fails.
func (n *Nonces) Close() error {
	n.closeOnce.Do(func() {
		close(n.stop)
		<-n.stopped
		n.closeErr = errors.Join(n.db.Sync(), n.db.Close())
	})
	return n.closeErr
}

// Reset leaves everything: nonces are not read models, and no rebuild of
// the log may reopen them.
func (n *Nonces) Reset(context.Context) error { return nil }

// Use records nonce in scope until expires, and reports whether no earlier
// use is still valid (valid while its expiry is after now). Expiries are
// kept in microseconds, as the other stores keep them.
func (n *Nonces) Use(ctx context.Context, scope, nonce string, expires time.Time) (bool, error) {
	_, fresh, err := n.bind(ctx, 'n', scope, nonce, "", expires)
	return fresh, err
}

// Bind ties value to key in scope until expires unless a binding of key is
// still valid, and returns the value that holds and whether it is value.
// Bindings and nonces never collide.
func (n *Nonces) Bind(ctx context.Context, scope, key, value string, expires time.Time) (string, bool, error) {
	return n.bind(ctx, 'b', scope, key, value, expires)
}

// entryKey is kind, the scope's length, the scope and the key, so that no
// two (scope, key) pairs share an entry.
func entryKey(kind byte, scope, key string) []byte {
	k := make([]byte, 0, 1+binary.MaxVarintLen64+len(scope)+len(key))
	k = append(k, kind)
	k = binary.AppendUvarint(k, uint64(len(scope)))
	k = append(k, scope...)
	return append(k, key...)
}

func micros(t time.Time) uint64 { return uint64(max(t.UnixMicro(), 0)) }

func expiryKey(exp uint64, entry []byte) []byte {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(entry)), exp), entry...)
}

// binding is one Use or Bind waiting for the group transaction that
// records it.
type binding struct {
	key      []byte
	exp, now uint64
	value    string
	existing string
	fresh    bool
	err      error
	wake     chan bool // true: lead the next group; false: recorded
}

func (n *Nonces) bind(ctx context.Context, kind byte, scope, key, value string, expires time.Time) (string, bool, error) {
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	b := &binding{key: entryKey(kind, scope, key), exp: micros(expires), now: micros(n.now()), value: value, wake: make(chan bool, 1)}
	n.mu.Lock()
	n.queue = append(n.queue, b)
	lead := !n.leading
	n.leading = true
	n.mu.Unlock()
	if !lead {
		lead = <-b.wake
	}
	if lead {
		n.lead(ctx)
	}
	return b.existing, b.fresh, b.err
}

// lead records every queued binding (its caller's among them) in one
// bbolt transaction: under concurrent signed requests one commit serves
// many of them instead of each waiting for bbolt's single writer and
// paying its own commit. Bindings are applied in arrival order, so two of
// one key in one group decide exactly as one after the other. Whatever
// queued meanwhile is led by its first caller, so no caller records
// others' groups for long.
func (n *Nonces) lead(ctx context.Context) {
	n.mu.Lock()
	group := n.queue
	n.queue = nil
	n.mu.Unlock()
	var prune bool
	err := n.db.Update(func(tx *bbolt.Tx) error {
		prune = false
		entries, byExpiry := tx.Bucket(entriesBucket), tx.Bucket(expiryBucket)
		for _, b := range group {
			b.existing, b.fresh = "", false
			if v := entries.Get(b.key); len(v) >= 8 {
				prev := binary.BigEndian.Uint64(v)
				if prev > b.now {
					b.existing = string(v[8:])
					continue
				}
				if err := byExpiry.Delete(expiryKey(prev, b.key)); err != nil {
					return err
				}
			}
			if err := entries.Put(b.key, append(binary.BigEndian.AppendUint64(nil, b.exp), b.value...)); err != nil {
				return err
			}
			if err := byExpiry.Put(expiryKey(b.exp, b.key), nil); err != nil {
				return err
			}
			b.existing, b.fresh = b.value, true
			n.inserts++
			prune = prune || n.inserts%pruneEvery == 0
		}
		return nil
	})
	if err != nil {
		err = fmt.Errorf("internal/nonces/bolt: record a group of %d nonces and bindings: %w", len(group), err)
	} else if prune {
		if _, perr := n.Prune(context.WithoutCancel(ctx)); perr != nil {
			err = perr
		}
	}
	for _, b := range group {
		if err != nil {
			b.existing, b.fresh, b.err = "", false, err
		}
		b.wake <- false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.queue) > 0 {
		n.queue[0].wake <- true
		return
	}
	n.leading = false
}

// Prune deletes up to pruneBatch expired entries, oldest first, and
// reports how many.
func (n *Nonces) Prune(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	now := micros(n.now())
	deleted := 0
	err := n.db.Update(func(tx *bbolt.Tx) error {
		entries, byExpiry := tx.Bucket(entriesBucket), tx.Bucket(expiryBucket)
		c := byExpiry.Cursor()
		for xk, _ := c.First(); xk != nil && deleted < pruneBatch; xk, _ = c.First() {
			if len(xk) < 8 {
				return errors.New("malformed expiry key")
			}
			if binary.BigEndian.Uint64(xk) > now {
				break
			}
			if err := entries.Delete(xk[8:]); err != nil {
				return err
			}
			if err := c.Delete(); err != nil {
				return err
			}
			deleted++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("internal/nonces/bolt: prune expired nonces: %w", err)
	}
	return deleted, nil
}

// Len is how many entries the file holds (tests of pruning).
func (n *Nonces) Len() (int, error) {
	var count int
	err := n.db.View(func(tx *bbolt.Tx) error {
		count = tx.Bucket(entriesBucket).Stats().KeyN
		return nil
	})
	return count, err
}

// Each calls fn with every entry of the file (its key as
// filelog.EntryKey makes it, its expiry and value), so that a node moving
// to the append-only nonce file (internal/nonces/filelog) keeps refusing what
// this file refused.
func (n *Nonces) Each(fn func(key string, expires time.Time, value string) error) error {
	return n.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(entriesBucket).ForEach(func(k, v []byte) error {
			if len(v) < 8 {
				return fmt.Errorf("internal/nonces/bolt: malformed entry of %d bytes", len(v))
			}
			return fn(string(k), time.UnixMicro(int64(binary.BigEndian.Uint64(v))), string(v[8:]))
		})
	})
}

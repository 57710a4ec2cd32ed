// Package filelog keeps an embedded node's replay guard (scheme H nonces
// and scheme M signature bindings, nonces.Store) in an
// append-only file in the data directory, with the entries still valid in
// memory: a use or binding is decided in memory and answered once its
// record is written to the file (one write for every record queued
// meanwhile), so a restart or a kill -9 inside the timestamp window does
// not forget it. Open reads the file back, keeping what has not expired.
// It replaces the bbolt file (internal/nonces/bolt), whose B-tree commit per
// group of signed requests cost more than the rest of the check.
package filelog

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/healthtech/partner-open-platform/internal/nonces"
)

// LockTimeout is how long Open waits for another process to release the
// file; two nodes cannot share one data directory.
const LockTimeout = 5 * time.Second

// SyncEvery is how long a written record may wait for its fsync. Records
// are written (to the OS) before their caller is answered, so a crashed or
// killed process loses nothing; an OS crash or power loss may lose the last
// SyncEvery, as with the bbolt file this replaces. The wait starts at the
// first write since the last fsync, so an idle file arms no timer.
const SyncEvery = time.Second

// compactMin is how many dead records the file may hold beyond the live
// ones before it is rewritten with the live entries only.
const compactMin = 1 << 16

// ErrClosed is returned by every call after Close.
var ErrClosed = errors.New("internal/nonces/filelog: nonce file closed")

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// entry is one valid use or binding: its expiry (µs since the epoch), its
// value, and the sequence number of its record (answered once written).
type entry struct {
	exp   uint64
	value string
	seq   uint64
}

// expiring orders keys by expiry for pruning (a min-heap); an item whose
// expiry no longer matches its key's entry is stale and skipped.
type expiring struct {
	exp uint64
	key string
}

// Nonces is the durable replay guard of one embedded node.
type Nonces struct {
	path string
	now  func() time.Time

	mu      sync.Mutex
	entries map[string]entry
	heap    []expiring
	buf     []byte // records not yet written
	spare   []byte // a written buffer kept for buf while another is written
	queued  uint64 // sequence number of the last record queued
	records int    // records in the file, written or queued
	closed  bool

	wmu     sync.Mutex // held while writing (leader of a group) and compacting
	file    *os.File
	synced  uint64 // guarded by wmu: the last sequence number fsynced
	fsyncs  int    // guarded by wmu: fsyncs of the periodic sync (tests)
	writes  int    // guarded by wmu: writes of queued records (tests)
	written uint64 // guarded by mu: last sequence number written
	werr    error  // guarded by mu: a failed write fails every later call

	// dirty holds a token once a write lands after the last fsync's wait
	// began: the sync loop waits for it before arming its timer.
	dirty   chan struct{}
	stop    chan struct{}
	stopped chan struct{}
}

// Open opens (creating) the file at path and reads back the entries that
// have not expired. A record cut short by a crash at the end of the file is
// dropped (its caller was never answered).
func Open(path string) (*Nonces, error) {
	return open(path, func() <-chan time.Time { return time.After(SyncEvery) })
}

// open is Open with the wait before each fsync made by wait.
func open(path string, wait func() <-chan time.Time) (*Nonces, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("internal/nonces/filelog: open %s: %w", path, err)
	}
	if err := lock(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("internal/nonces/filelog: %s is in use by another process (no lock within %s): %w", path, LockTimeout, err)
	}
	n := &Nonces{path: path, now: time.Now, entries: map[string]entry{}, file: f, dirty: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	good, err := n.load(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, fmt.Errorf("internal/nonces/filelog: drop the torn end of %s: %w", path, err)
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("internal/nonces/filelog: seek %s: %w", path, err)
	}
	n.prune(micros(n.now()))
	if n.records > 2*len(n.entries)+compactMin/4 {
		if err := n.compact(); err != nil {
			n.file.Close()
			return nil, err
		}
	}
	go n.sync(wait)
	return n, nil
}

// lock takes an exclusive advisory lock on f, waiting up to LockTimeout.
func lock(f *os.File) error {
	deadline := time.Now().Add(LockTimeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil || !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A record is its payload's length (uint32), the payload's CRC-32C
// (uint32) and the payload: the expiry (uint64 µs), the key's length
// (uvarint), the key and the value.
const headerLen = 8

func appendRecord(b []byte, key string, exp uint64, value string) []byte {
	start := len(b)
	b = append(b, make([]byte, headerLen)...)
	b = binary.BigEndian.AppendUint64(b, exp)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = append(b, value...)
	payload := b[start+headerLen:]
	binary.BigEndian.PutUint32(b[start:], uint32(len(payload)))
	binary.BigEndian.PutUint32(b[start+4:], crc32.Checksum(payload, crcTable))
	return b
}

// load reads every whole record of f into the entries (a later record of a
// key replaces an earlier one: a key is only written again once expired)
// and returns the offset after the last whole record.
func (n *Nonces) load(f *os.File) (int64, error) {
	r := bufio.NewReaderSize(f, 1<<16)
	var good int64
	var head [headerLen]byte
	var payload []byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return good, nil
			}
			return 0, fmt.Errorf("internal/nonces/filelog: read %s: %w", n.path, err)
		}
		size := binary.BigEndian.Uint32(head[:4])
		if size < 9 || size > 1<<20 {
			return good, nil // torn or garbage: the end of what was written
		}
		if cap(payload) < int(size) {
			payload = make([]byte, size)
		}
		payload = payload[:size]
		if _, err := io.ReadFull(r, payload); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return good, nil
			}
			return 0, fmt.Errorf("internal/nonces/filelog: read %s: %w", n.path, err)
		}
		if crc32.Checksum(payload, crcTable) != binary.BigEndian.Uint32(head[4:]) {
			return good, nil
		}
		exp := binary.BigEndian.Uint64(payload)
		klen, w := binary.Uvarint(payload[8:])
		if w <= 0 || uint64(len(payload)-8-w) < klen {
			return good, nil
		}
		key := string(payload[8+w : 8+w+int(klen)])
		value := string(payload[8+w+int(klen):])
		n.entries[key] = entry{exp: exp, value: value}
		n.heap = pushExpiring(n.heap, expiring{exp, key})
		n.records++
		good += headerLen + int64(size)
	}
}

func (n *Nonces) sync(wait func() <-chan time.Time) {
	defer close(n.stopped)
	for {
		select {
		case <-n.dirty:
		case <-n.stop:
			return
		}
		select {
		case <-wait():
			n.syncWritten()
		case <-n.stop:
			return
		}
	}
}

// syncWritten fsyncs the file if records were written since its last
// fsync: an idle node's file is left alone (an fsync a second was most of
// an idle embedded node's own CPU). A failed fsync is retried after the
// next wait and at Close.
func (n *Nonces) syncWritten() {
	n.wmu.Lock() // writes and compaction hold it: written is stable below
	defer n.wmu.Unlock()
	n.mu.Lock()
	written := n.written
	n.mu.Unlock()
	if written == n.synced {
		return
	}
	n.fsyncs++
	if n.file.Sync() == nil {
		n.synced = written
		return
	}
	select {
	case n.dirty <- struct{}{}: // try again after the next wait
	default:
	}
}

// Close writes and fsyncs what is queued and releases the file; later
// calls fail with ErrClosed.
func (n *Nonces) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	last := n.queued
	n.mu.Unlock()
	close(n.stop)
	<-n.stopped
	werr := n.flush(last)
	n.wmu.Lock()
	defer n.wmu.Unlock()
	return errors.Join(werr, n.file.Sync(), n.file.Close())
}

// Sync writes what is queued and fsyncs the file (an import that removes
// its source afterwards).
func (n *Nonces) Sync() error {
	n.mu.Lock()
	last := n.queued
	n.mu.Unlock()
	if err := n.flush(last); err != nil {
		return err
	}
	n.wmu.Lock()
	defer n.wmu.Unlock()
	if err := n.file.Sync(); err != nil {
		return fmt.Errorf("internal/nonces/filelog: sync %s: %w", n.path, err)
	}
	return nil
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

// EntryKey is kind ('n' for a nonce, 'b' for a binding), the scope's
// length, the scope and the key, so that no two (scope, key) pairs share an
// entry; it is the bbolt file's key too, so Restore can take its entries.
func EntryKey(kind byte, scope, key string) string {
	var n [binary.MaxVarintLen64]byte
	var k strings.Builder // one allocation: String does not copy
	k.Grow(1 + binary.MaxVarintLen64 + len(scope) + len(key))
	k.WriteByte(kind)
	k.Write(binary.AppendUvarint(n[:0], uint64(len(scope))))
	k.WriteString(scope)
	k.WriteString(key)
	return k.String()
}

func micros(t time.Time) uint64 { return uint64(max(t.UnixMicro(), 0)) }

// pruneEvery: one new entry in pruneEvery drops the expired ones from
// memory (the heap makes that cost what expired, not what is held).
const pruneEvery = 64

func (n *Nonces) bind(ctx context.Context, kind byte, scope, key, value string, expires time.Time) (string, bool, error) {
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	k := EntryKey(kind, scope, key)
	now := micros(n.now())
	n.mu.Lock()
	if err := n.usable(); err != nil {
		n.mu.Unlock()
		return "", false, err
	}
	held, fresh, seq := n.decide(k, micros(expires), value, now)
	n.mu.Unlock()
	// The record deciding this may still be queued: answer once it is
	// written, so that no answer depends on a record a crash can lose.
	if err := n.flush(seq); err != nil {
		return "", false, err
	}
	return held, fresh, nil
}

// BindRouteAndClaim implements idempotency.RouteClaimer: a scheme M
// write's route binding and, when that binding holds routeName outright
// (nonces.HoldsRoute), its claim, decided together and answered once both
// records are written, by one write where Bind and Bind would make two.
// bound is the route binding's value as Bind answers it; claimed says
// whether the claim was bound, and fresh whether it is this call's own.
// On another route no claim is left behind: the caller judges the route
// and claims on its own.
func (n *Nonces) BindRouteAndClaim(ctx context.Context, route, claim nonces.Binding, routeName string) (bound string, claimed, fresh bool, err error) {
	if err := ctx.Err(); err != nil {
		return "", false, false, err
	}
	rk, ck := EntryKey('b', route.Scope, route.Key), EntryKey('b', claim.Scope, claim.Key)
	now := micros(n.now())
	n.mu.Lock()
	if err := n.usable(); err != nil {
		n.mu.Unlock()
		return "", false, false, err
	}
	bound, own, seq := n.decide(rk, micros(route.Expires), route.Value, now)
	if own || nonces.HoldsRoute(bound, routeName) {
		var cseq uint64
		_, fresh, cseq = n.decide(ck, micros(claim.Expires), claim.Value, now)
		claimed, seq = true, max(seq, cseq)
	}
	n.mu.Unlock()
	if err := n.flush(seq); err != nil {
		return "", false, false, err
	}
	return bound, claimed, fresh, nil
}

// usable is the error every call gets once the store is closed or a write
// failed; mu is held.
func (n *Nonces) usable() error {
	if n.closed {
		return ErrClosed
	}
	return n.werr
}

// decide binds value to the entry key k until exp unless a valid entry
// holds k, and returns the value that holds, whether it is value, and the
// sequence number of the record that decided it (to flush before
// answering); mu is held.
func (n *Nonces) decide(k string, exp uint64, value string, now uint64) (string, bool, uint64) {
	if e, ok := n.entries[k]; ok && e.exp > now {
		return e.value, false, e.seq
	}
	seq := n.queue(k, exp, value)
	if seq%pruneEvery == 0 {
		n.prune(now)
	}
	return value, true, seq
}

// queue records an entry in memory and its record in the write buffer;
// mu is held.
func (n *Nonces) queue(k string, exp uint64, value string) uint64 {
	n.queued++
	n.entries[k] = entry{exp: exp, value: value, seq: n.queued}
	n.heap = pushExpiring(n.heap, expiring{exp, k})
	if n.buf == nil {
		n.buf, n.spare = n.spare, nil
	}
	n.buf = appendRecord(n.buf, k, exp, value)
	n.records++
	return n.queued
}

// Restore records an entry taken from another store (the bbolt file of
// earlier releases) unless it has expired or the key already holds a valid
// entry; it returns once the record is written.
func (n *Nonces) Restore(key string, expires time.Time, value string) error {
	exp, now := micros(expires), micros(n.now())
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return ErrClosed
	}
	if e, ok := n.entries[key]; exp <= now || (ok && e.exp > now) {
		n.mu.Unlock()
		return nil
	}
	seq := n.queue(key, exp, value)
	n.mu.Unlock()
	return n.flush(seq)
}

// flush returns once the record seq is written: the first caller to get
// the write lock writes everything queued by then in one write, so under
// concurrent requests one write serves many of them.
func (n *Nonces) flush(seq uint64) error {
	n.mu.Lock()
	done, err := n.written >= seq, n.werr
	n.mu.Unlock()
	if err != nil {
		return err
	}
	if done {
		return nil
	}
	n.wmu.Lock()
	defer n.wmu.Unlock()
	n.mu.Lock()
	if n.written >= seq || n.werr != nil {
		err := n.werr
		n.mu.Unlock()
		return err
	}
	buf, last := n.buf, n.queued
	n.buf = nil
	compact := n.records > 2*len(n.entries)+compactMin
	n.mu.Unlock()
	_, err = n.file.Write(buf)
	n.writes++
	n.mu.Lock()
	if err != nil {
		n.werr = fmt.Errorf("internal/nonces/filelog: write %s: %w", n.path, err)
		err = n.werr
	} else {
		n.written = last
		select {
		case n.dirty <- struct{}{}:
		default: // a wait is already due
		}
	}
	// Reuse the written buffer for the next group, or as the spare when
	// records were queued during the write (two buffers take turns).
	if cap(buf) <= 1<<20 {
		if n.buf == nil {
			n.buf = buf[:0]
		} else {
			n.spare = buf[:0]
		}
	}
	n.mu.Unlock()
	if err == nil && compact {
		if cerr := n.compactLocked(); cerr != nil {
			n.mu.Lock()
			n.werr = cerr
			n.mu.Unlock()
			return cerr
		}
	}
	return err
}

// prune drops expired entries from memory; mu is held.
func (n *Nonces) prune(now uint64) {
	for len(n.heap) > 0 && n.heap[0].exp <= now {
		var it expiring
		n.heap, it = popExpiring(n.heap)
		if e, ok := n.entries[it.key]; ok && e.exp == it.exp {
			delete(n.entries, it.key)
		}
	}
}

// compact rewrites the file with the live entries only (Open).
func (n *Nonces) compact() error {
	n.wmu.Lock()
	defer n.wmu.Unlock()
	return n.compactLocked()
}

// compactLocked writes the valid entries to a new file, fsyncs it and
// renames it over the old one, so a crash leaves one or the other whole;
// wmu is held, and mu is taken so nothing is queued meanwhile.
func (n *Nonces) compactLocked() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.prune(micros(n.now()))
	tmp := n.path + ".compact"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("internal/nonces/filelog: compact %s: %w", n.path, err)
	}
	w := bufio.NewWriterSize(f, 1<<16)
	var rec []byte
	for k, e := range n.entries {
		rec = appendRecord(rec[:0], k, e.exp, e.value)
		if _, err := w.Write(rec); err != nil {
			break
		}
	}
	// Records queued but not written are in the new file too (they come
	// from the entries): the buffer starts empty again.
	err = errors.Join(w.Flush(), f.Sync())
	if err == nil {
		err = lock(f)
	}
	if err == nil {
		err = os.Rename(tmp, n.path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(n.path))
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("internal/nonces/filelog: compact %s: %w", n.path, err)
	}
	n.file.Close()
	n.file = f
	n.buf = n.buf[:0]
	n.written = n.queued
	n.synced = n.written // the new file was fsynced whole
	n.records = len(n.entries)
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// Len is how many valid or not yet pruned entries are held (tests of
// pruning), after dropping the expired ones.
func (n *Nonces) Len() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.prune(micros(n.now()))
	return len(n.entries)
}

func pushExpiring(h []expiring, it expiring) []expiring {
	h = append(h, it)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p].exp <= h[i].exp {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	return h
}

func popExpiring(h []expiring) ([]expiring, expiring) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].exp < h[m].exp {
			m = l
		}
		if r < len(h) && h[r].exp < h[m].exp {
			m = r
		}
		if m == i {
			break
		}
		h[m], h[i] = h[i], h[m]
		i = m
	}
	return h, top
}

package bolt_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// noFreelist is bbolt's freelist page id meaning "not written: walk the
// file at open to find the free pages".
const noFreelist = ^uint64(0)

// committedFreelist reads the freelist page id of the newest meta page of
// a closed bbolt file (page header 16 bytes, then magic, version, page
// size, flags, root bucket (16 bytes), freelist, high water mark, txid).
func committedFreelist(t *testing.T, path string) uint64 {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pageSize := int(binary.LittleEndian.Uint32(raw[16+8:]))
	var best, txid uint64
	for _, at := range []int{0, pageSize} {
		m := raw[at+16:]
		if id := binary.LittleEndian.Uint64(m[48:]); id >= txid {
			best, txid = binary.LittleEndian.Uint64(m[32:]), id
		}
	}
	return best
}

// A graceful close leaves the freelist in the file, so the next open of a
// big log reads one page instead of walking all of them (seconds for a
// 1 GB log), and what was appended around the closes is all there.
func TestCloseWritesTheFreelist(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "events.db")
	s := openT(t, path)
	for i := range 50 {
		if _, err := s.Append(ctx, "s", events.Any(), ev("freelist.a", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if committedFreelist(t, path) == noFreelist {
		t.Fatal("a graceful close left no freelist: the next open walks the whole file")
	}
	s = openT(t, path)
	for i := range 50 {
		if _, err := s.Append(ctx, "s", events.Any(), ev("freelist.b", i)); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.ReadAll(ctx, events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 100 {
		t.Fatalf("the log holds %d events after a close, a reopen and appends, want 100", len(all))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, path)
	defer s.Close()
	if all, err := s.ReadAll(ctx, events.Position{}, 0); err != nil || len(all) != 100 {
		t.Fatalf("after a second close: %d events, %v", len(all), err)
	}
}

// A crash leaves the freelist in the file too: every commit writes it, so
// the file as a kill -9 leaves it (copied here while the log is open and
// has not closed) names its freelist page, and opens with every
// acknowledged append in it.
func TestCrashLeavesTheFreelist(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "events.db")
	s := openT(t, path)
	defer s.Close()
	for i := range 50 {
		if _, err := s.Append(ctx, fmt.Sprintf("s-%d", i), events.NoStream(), ev("freelist.crash", i)); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crashed := filepath.Join(t.TempDir(), "events.db")
	if err := os.WriteFile(crashed, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if committedFreelist(t, crashed) == noFreelist {
		t.Fatal("the file of a running log holds no freelist: an open after a crash walks every page")
	}
	c := openT(t, crashed)
	defer c.Close()
	if all, err := c.ReadAll(ctx, events.Position{}, 0); err != nil || len(all) != 50 {
		t.Fatalf("the crashed copy holds %d events (%v), want the 50 acknowledged", len(all), err)
	}
}

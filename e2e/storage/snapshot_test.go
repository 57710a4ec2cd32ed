package storage_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory"
	"github.com/healthtech/partner-open-platform/projections/memory/snapfile"
)

// restoredFromSnapshot reports whether a node restored its read models
// from the snapshot (as its adapters tell operators at start).
func restoredFromSnapshot(p *harness.Platform) bool {
	return strings.Contains(p.Node.Adapters["read models"], "restored from")
}

// images copies every read model of a node's embedded read models once the
// node is quiet: the webhook dispatcher appends deliveries after the events
// they come from, and the sender appends its attempts' outcomes, so every
// delivery the log calls for is waited for and the log is left to settle
// (its head unchanged for a while, bounded).
func images(t *testing.T, p *harness.Platform) []snapfile.Image {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var last events.Position
	for i := 0; i < 100; i++ {
		if err := p.Node.WaitDeliveriesCreated(ctx); err != nil {
			t.Fatal(err)
		}
		head, err := p.Node.Events.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && head == last {
			break
		}
		last = head
		time.Sleep(200 * time.Millisecond)
	}
	mem := p.Node.ReadModel.(*memory.Store)
	var out []snapfile.Image
	for _, f := range projections.ReadModels {
		im, err := mem.Image(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, im)
	}
	return out
}

// sameModels fails unless two nodes' read models hold the same rows,
// read model by read model, checked from each side. Checkpoints are left out: a
// read model that had nothing to apply saves its checkpoint lazily, so equal
// rows may sit at different checkpoints.
func sameModels(t *testing.T, what string, a, b []snapfile.Image) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d families vs %d", what, len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		x.Checkpoint, y.Checkpoint = events.Position{}, events.Position{}
		if x.Rows() != y.Rows() {
			t.Errorf("%s: family %s has %d rows vs %d", what, x.ReadModel, x.Rows(), y.Rows())
			continue
		}
		if !reflect.DeepEqual(x, y) || !reflect.DeepEqual(y, x) {
			t.Errorf("%s: family %s differs (%s)", what, x.ReadModel, firstDifference(x, y))
		}
	}
}

// firstDifference names the first row kind whose rows differ.
func firstDifference(x, y snapfile.Image) string {
	vx, vy := reflect.ValueOf(x), reflect.ValueOf(y)
	for i := 0; i < vx.NumField(); i++ {
		if vx.Field(i).Kind() != reflect.Slice {
			continue
		}
		for j := 0; j < vx.Field(i).Len() && j < vy.Field(i).Len(); j++ {
			if !reflect.DeepEqual(vx.Field(i).Index(j).Interface(), vy.Field(i).Index(j).Interface()) {
				return fmt.Sprintf("%s[%d]: %+v vs %+v", vx.Type().Field(i).Name, j, vx.Field(i).Index(j).Interface(), vy.Field(i).Index(j).Interface())
			}
		}
	}
	return "?"
}

// copyTree copies a data directory (a stopped node's) so that a second node
// can replay the same log from nothing.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, src); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// fillModels writes to every read model a partner can reach: users with groups
// and members, a profile update, a member deletion, a webhook delivery.
func fillModels(t *testing.T, a *harness.App, from, n int) []string {
	t.Helper()
	var paths []string
	for i := from; i < from+n; i++ {
		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody(fmt.Sprintf("snap-%d", i)), http.StatusCreated, "0").Data(t, &reg)
		user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
		a.Expect("PATCH", user, map[string]any{"nickname": fmt.Sprintf("n%d", i)}, http.StatusOK, "0")
		paths = append(paths, user)
	}
	return paths
}

// replayOf starts a node on a copy of dir with snapshots off, so it
// replays the whole log, and returns its read models.
func replayOf(t *testing.T, dir string) []snapfile.Image {
	t.Helper()
	twin := t.TempDir()
	copyTree(t, dir, twin)
	os.Remove(filepath.Join(twin, node.SnapshotFile))
	r := harness.Start(t, node.Config{DataDir: twin, SnapshotInterval: -1})
	defer r.Stop()
	if restoredFromSnapshot(r) {
		t.Fatal("a node with snapshots off restored one")
	}
	return images(t, r)
}

func TestSnapshotRestartEqualsReplay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := harness.Start(t, node.Config{DataDir: dir})
	if restoredFromSnapshot(p) {
		t.Fatal("a fresh data directory restored a snapshot")
	}
	a := p.CreateApp("snap")
	fillModels(t, a, 0, 5)
	written := images(t, p)
	p.Stop() // a graceful stop writes the snapshot
	if _, err := os.Stat(filepath.Join(dir, node.SnapshotFile)); err != nil {
		t.Fatalf("no snapshot after a graceful stop: %v", err)
	}

	q := harness.Start(t, node.Config{DataDir: dir})
	if !restoredFromSnapshot(q) {
		t.Fatalf("restart did not restore the snapshot: %s", q.Node.Adapters["read models"])
	}
	a.P = q
	sameModels(t, "restored vs before the stop", images(t, q), written)
	// The restored node goes on from its checkpoints: new writes land on top.
	added := fillModels(t, a, 5, 3)
	a.Expect("GET", added[1], nil, http.StatusOK, "0")
	restored := images(t, q)
	q.Stop()
	sameModels(t, "restored and caught up vs full replay", restored, replayOf(t, dir))
}

func TestSnapshotTornFallsBackToReplay(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	p := harness.Start(t, node.Config{DataDir: base})
	a := p.CreateApp("snap")
	users := fillModels(t, a, 0, 4)
	p.Stop()
	raw, err := os.ReadFile(filepath.Join(base, node.SnapshotFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"cut in the body (a crash while writing without the rename)", raw[:len(raw)*2/3]},
		{"cut in the header", raw[:20]},
		{"one byte changed", func() []byte { b := bytes.Clone(raw); b[len(b)/2] ^= 1; return b }()},
		{"empty", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Each damage on its own copy of the directory, so the cases
			// (a node start and a full replay each) run side by side.
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "node")
			copyTree(t, base, dir)
			path := filepath.Join(dir, node.SnapshotFile)
			if err := os.WriteFile(path, c.data, 0o600); err != nil {
				t.Fatal(err)
			}
			// A crash mid-write also leaves a temporary file behind.
			if err := os.WriteFile(path+".tmp-crash", raw[:len(raw)/2], 0o600); err != nil {
				t.Fatal(err)
			}
			q := harness.Start(t, node.Config{DataDir: dir})
			if restoredFromSnapshot(q) {
				t.Fatal("a damaged snapshot was restored")
			}
			b := *a
			b.P = q
			b.Expect("GET", users[3], nil, http.StatusOK, "0")
			got := images(t, q)
			q.Stop()
			sameModels(t, "replayed after a damaged snapshot vs full replay", got, replayOf(t, dir))
		})
	}
}

// A snapshot taken of one log is refused over another that shares its
// beginning and then went its own way (a data directory restored from a
// backup older than the snapshot), even when the key store holds the
// snapshot's key: only the check of the events at its checkpoints can
// tell, and the node replays its own log.
func TestSnapshotFromAnotherLogIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	one, two := t.TempDir(), t.TempDir()
	p := harness.Start(t, node.Config{DataDir: one})
	a := p.CreateApp("one")
	p.Stop()
	// The backup: two shares the keys and the first events of one.
	copyTree(t, one, two)
	p = harness.Start(t, node.Config{DataDir: one})
	a.P = p
	fillModels(t, a, 0, 3)
	p.Stop() // writes one's snapshot, after events two never had
	snapPath := filepath.Join(one, node.SnapshotFile)
	snap, err := os.ReadFile(snapPath)
	if err != nil {
		t.Fatal(err)
	}
	h, err := snapfile.ReadHeader(snapPath)
	if err != nil {
		t.Fatal(err)
	}
	var last events.Position
	for _, f := range append(h.ReadModels, h.Directories...) {
		if last.Less(f.Checkpoint) {
			last = f.Checkpoint
		}
	}

	// Two's log goes on with other events until it reaches every position
	// the snapshot names, so each is checked against an event (bounded:
	// every round appends).
	q := harness.Start(t, node.Config{DataDir: two})
	b := q.CreateApp("two")
	for i := 0; ; i++ {
		head, err := q.Node.Events.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !head.Less(last) {
			break
		}
		if i == 20 {
			t.Fatalf("two's log at %v after %d rounds, the snapshot names %v", head, i, last)
		}
		fillModels(t, b, i, 1)
	}
	images(t, q) // its deliveries created, so the next node has none to add
	q.Stop()

	// The snapshot's key joins two's key store (its line as one's store
	// wrote it), as a key directory restored from a later backup would.
	keyLine := keyLineOf(t, filepath.Join(one, "keys", "keys.log"), h.KeySubject)
	f, err := os.OpenFile(filepath.Join(two, "keys", "keys.log"), os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(append(keyLine, '\n')); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(two, node.SnapshotFile), snap, 0o600); err != nil {
		t.Fatal(err)
	}

	logs := &harness.SyncBuffer{}
	r := harness.Start(t, node.Config{DataDir: two, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	defer r.Stop()
	if restoredFromSnapshot(r) {
		t.Fatal("restored a snapshot whose positions hold other events in this log")
	}
	if !strings.Contains(logs.String(), "the log holds event") {
		t.Fatalf("the snapshot was not refused for the events at its checkpoints; the node logged:\n%s", logs.String())
	}
	got := images(t, r)
	r.Stop()
	sameModels(t, "after refusing a foreign snapshot vs full replay", got, replayOf(t, two))
}

// keyLineOf is the line of an embedded key store's log that holds the key
// of subject.
func keyLineOf(t *testing.T, path, subject string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if bytes.Contains(line, []byte(`"op":"key"`)) && bytes.Contains(line, []byte(`"subject":"`+subject+`"`)) {
			return line
		}
	}
	t.Fatalf("no key of %s in %s", subject, path)
	return nil
}

func TestRebuildShredsSnapshot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := harness.Start(t, node.Config{DataDir: dir})
	a := p.CreateApp("snap")
	users := fillModels(t, a, 0, 3)
	p.Stop()
	path := filepath.Join(dir, node.SnapshotFile)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	q := harness.Start(t, node.Config{DataDir: dir})
	if !restoredFromSnapshot(q) {
		t.Fatal("restart did not restore the snapshot")
	}
	if res := q.Admin("POST", "/admin/v1/projections/users/rebuild", nil); res.Status != http.StatusAccepted {
		t.Fatalf("rebuild: %d %s", res.Status, res.Raw)
	}
	// The snapshot the start restored is gone when the rebuild is accepted;
	// the one a rebuild's end writes (at once when the rebuild is short) is
	// a new file, sealed anew.
	if now, err := os.ReadFile(path); err == nil && bytes.Equal(now, before) {
		t.Fatal("the snapshot outlived the rebuild's reset")
	}
	a.P = q
	a.Expect("GET", users[2], nil, http.StatusOK, "0")
	got := images(t, q)
	q.Stop()
	sameModels(t, "after rebuild vs full replay", got, replayOf(t, dir))
}

func TestErasureShredsSnapshot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := harness.Start(t, node.Config{DataDir: dir})
	a := p.CreateApp("snap")
	users := fillModels(t, a, 0, 3)
	p.Stop()
	path := filepath.Join(dir, node.SnapshotFile)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	q := harness.Start(t, node.Config{DataDir: dir})
	if !restoredFromSnapshot(q) {
		t.Fatal("restart did not restore the snapshot")
	}
	a.P = q
	var gone harness.RegisterData
	a.Expect("GET", users[1], nil, http.StatusOK, "0")
	if _, err := fmt.Sscanf(users[1], "/open/v1/channel/users/%d", &gone.OpenUserID); err != nil {
		t.Fatal(err)
	}
	res := q.Admin("POST", fmt.Sprintf("/admin/v1/channel-users/%d/erase", gone.OpenUserID), map[string]any{"reason": "ticket 9"})
	if res.Status != http.StatusOK {
		t.Fatalf("erase: %d %s", res.Status, res.Raw)
	}
	// Acknowledged: the snapshot holding the person in clear is gone, and
	// its key with it.
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the snapshot survived the erasure's acknowledgement: %v", err)
	}
	a.Expect("GET", fmt.Sprintf("/open/v1/channel/users/%d", gone.OpenUserID), nil, http.StatusNotFound, "USER_NOT_FOUND")
	q.Stop() // writes a new snapshot, without the person

	restarted := harness.Start(t, node.Config{DataDir: dir})
	if !restoredFromSnapshot(restarted) {
		t.Fatal("no snapshot written after the erasure was applied")
	}
	a.P = restarted
	a.Expect("GET", fmt.Sprintf("/open/v1/channel/users/%d", gone.OpenUserID), nil, http.StatusNotFound, "USER_NOT_FOUND")
	for _, im := range images(t, restarted) {
		for _, u := range im.Users {
			if u.OpenUserID == gone.OpenUserID {
				t.Fatalf("the restored read models hold the erased user: %+v", u)
			}
		}
		for _, m := range im.Members {
			if m.OpenUserID == gone.OpenUserID {
				t.Fatalf("the restored read models hold the erased user's member: %+v", m)
			}
		}
	}
	restarted.Stop()

	// The snapshot from before the erasure, put back (a backup, a disk
	// image): its key was destroyed, so it cannot be opened or restored.
	if err := os.WriteFile(path, before, 0o600); err != nil {
		t.Fatal(err)
	}
	old := harness.Start(t, node.Config{DataDir: dir})
	if restoredFromSnapshot(old) {
		t.Fatal("restored a snapshot taken before an erasure")
	}
	a.P = old
	a.Expect("GET", fmt.Sprintf("/open/v1/channel/users/%d", gone.OpenUserID), nil, http.StatusNotFound, "USER_NOT_FOUND")
}

func TestSnapshotSurvivesMasterKeyRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := harness.Start(t, node.Config{DataDir: dir})
	a := p.CreateApp("snap")
	users := fillModels(t, a, 0, 2)
	p.Stop()
	keyA, err := os.ReadFile(filepath.Join(dir, "master.key"))
	if err != nil {
		t.Fatal(err)
	}
	keyB := strings.Repeat("c4", 32)
	if err := os.WriteFile(filepath.Join(dir, "master.key"), []byte(keyB+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "master.key.previous"), keyA, 0o600); err != nil {
		t.Fatal(err)
	}
	q := harness.Start(t, node.Config{DataDir: dir})
	if !restoredFromSnapshot(q) {
		t.Fatal("the snapshot sealed under the previous master key was not restored")
	}
	if res := q.Admin("POST", "/admin/v1/keys/rotate", nil); res.Status != http.StatusOK {
		t.Fatalf("rotate: %d %s", res.Status, res.Raw)
	}
	a.P = q
	fillModels(t, a, 2, 1) // so the stop writes a new snapshot
	q.Stop()
	r := harness.Start(t, node.Config{DataDir: dir})
	defer r.Stop()
	if !restoredFromSnapshot(r) {
		t.Fatal("the snapshot written after the rotation was not restored")
	}
	a.P = r
	a.Expect("GET", users[1], nil, http.StatusOK, "0")
}

// With a long interval, the snapshot still follows the log: once the
// read models have read SnapshotEvents events since the last snapshot, a new
// one is written while the node runs (no stop), so a kill -9 leaves at most
// about that many events to replay.
func TestSnapshotFollowsTheLogsGrowth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, node.SnapshotFile)
	p := harness.Start(t, node.Config{DataDir: dir, SnapshotInterval: time.Hour, SnapshotEvents: 10})
	defer p.Stop()
	usersAt := func() (snapfile.Header, events.Position, bool) {
		h, err := snapfile.ReadHeader(path)
		if err != nil {
			return h, events.Position{}, false
		}
		for _, f := range h.ReadModels {
			if f.ReadModel == projections.ReadModelUsers {
				return h, f.Checkpoint, true
			}
		}
		return h, events.Position{}, false
	}
	var first snapfile.Header
	for i := 0; i < 200; i++ { // the snapshot written once caught up (none was found)
		var ok bool
		if first, _, ok = usersAt(); ok {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if first.KeySubject == "" {
		t.Fatal("no snapshot once caught up")
	}
	a := p.CreateApp("snap")
	fillModels(t, a, 0, 5)
	// Once the writes (and the deliveries they cause) settle, the snapshot
	// on disk is a new one, fewer than SnapshotEvents events behind the head.
	var head, at events.Position
	for i := 0; i < 400; i++ {
		var err error
		if head, err = p.Node.Events.Head(context.Background()); err != nil {
			t.Fatal(err)
		}
		h, cp, ok := usersAt()
		if ok && h.KeySubject != first.KeySubject && head.Commit-cp.Commit < 10 {
			return
		}
		at = cp
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("with an hour's interval, the snapshot on disk stayed at %s, head %s", at, head)
}

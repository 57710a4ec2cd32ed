package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/healthtech/partner-open-platform/events"
)

// CheckpointFile is the file name NewFileCheckpoints uses in the data directory.
const CheckpointFile = "relay-checkpoint.json"

// FeedCheckpointFile is the position of the relay that writes the internal
// and the analytics topic. It is not CheckpointFile, which tracked the old
// single topic: a node upgraded from it relays the whole log once more, so
// both new topics start complete (the dispatcher's Create is idempotent).
const FeedCheckpointFile = "relay-feed-checkpoint.json"

// FileCheckpoints serves deployments without Postgres (one node, so one
// relay); atomic replaces mean a crash leaves the old or new position, never
// a torn one.
type FileCheckpoints struct {
	mu   sync.Mutex // one save at a time, so the position never moves backwards
	path string
	// saved is the position the file holds once a Save read or wrote it
	// (read is set): saves every checkpointEvery need not read the file
	// to keep the position from moving backwards. The file is this
	// value's alone.
	saved events.Position
	read  bool
}

var _ Checkpoints = (*FileCheckpoints)(nil)

// NewFileCheckpoints keeps the checkpoint in dataDir/relay-checkpoint.json.
func NewFileCheckpoints(dataDir string) *FileCheckpoints {
	return NewFileCheckpointsNamed(dataDir, CheckpointFile)
}

// NewFileCheckpointsNamed keeps the checkpoint in dataDir/name, so relays with different outputs keep separate positions.
func NewFileCheckpointsNamed(dataDir, name string) *FileCheckpoints {
	return &FileCheckpoints{path: filepath.Join(dataDir, name)}
}

// Load returns the zero position (relay from the start) when no file exists yet.
func (f *FileCheckpoints) Load(context.Context) (events.Position, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return events.Position{}, nil
	}
	if err != nil {
		return events.Position{}, fmt.Errorf("relay checkpoint: %w", err)
	}
	var pos events.Position
	if err := json.Unmarshal(b, &pos); err != nil {
		return events.Position{}, fmt.Errorf("relay checkpoint %s: %w", f.path, err)
	}
	return pos, nil
}

// Save writes and syncs a temp file and renames it over the old one, so a
// crash at any point, a kill -9 or a power loss, leaves the old position or
// the new one, each synced whole, never a torn file. The directory is not
// synced after the rename: a power loss may then keep the old position,
// which only redoes work the checkpoint's users redo idempotently (they
// resume from any earlier position), and a save costs one fsync rather
// than two. A position not after the saved one is ignored, so the
// checkpoint never moves backwards.
func (f *FileCheckpoints) Save(ctx context.Context, pos events.Position) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.read {
		cur, err := f.Load(ctx)
		if err != nil {
			return err
		}
		f.saved, f.read = cur, true
	}
	if !f.saved.Less(pos) {
		return nil
	}
	b, err := json.Marshal(pos)
	if err != nil {
		return fmt.Errorf("relay checkpoint: %w", err)
	}
	dir := filepath.Dir(f.path)
	tmp, err := os.CreateTemp(dir, filepath.Base(f.path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("relay checkpoint: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	_, err = tmp.Write(append(b, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.path)
	}
	if err != nil {
		return fmt.Errorf("relay checkpoint: %w", err)
	}
	f.saved = pos
	return nil
}

// Upgraded is a checkpoint that moved: it saves to Primary (Postgres, shared
// by every node) and, until Primary has a position, loads the one Legacy
// (this node's file from before) kept, so an upgraded cluster resumes where
// its relay was instead of relaying the whole log again. Whichever node's
// file it is, that node's relay did publish everything up to it.
type Upgraded struct {
	Primary, Legacy Checkpoints
}

var _ Checkpoints = Upgraded{}

// Load implements Checkpoints.
func (u Upgraded) Load(ctx context.Context) (events.Position, error) {
	pos, err := u.Primary.Load(ctx)
	if err != nil || !pos.IsZero() {
		return pos, err
	}
	return u.Legacy.Load(ctx)
}

// Save implements Checkpoints.
func (u Upgraded) Save(ctx context.Context, pos events.Position) error {
	return u.Primary.Save(ctx, pos)
}

package node

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/healthtech/partner-open-platform/events/bolt"
	keyfiles "github.com/healthtech/partner-open-platform/internal/datakeys/files"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/relay"
)

// dataBackup copies an embedded node's data directory while it runs.
type dataBackup struct {
	dir  string
	log  *bolt.Store
	keys *keyfiles.Store // nil when the keys are elsewhere
}

// newDataBackup is the backup of an embedded node's data directory: its
// log and, when they are files there, its personal-data keys (nil when the
// log is a shared store).
func newDataBackup(dir string, log *bolt.Store, keys *keyfiles.Store) *dataBackup {
	if log == nil {
		return nil
	}
	return &dataBackup{dir: dir, log: log, keys: keys}
}

// errBackupShared answers a backup request on a node whose log is a
// shared store: that store is backed up with its own tools.
var errBackupShared = &httpapi.Problem{Status: http.StatusNotFound, Code: "NOT_FOUND",
	Message: "this node's event log is a shared store: back it up with the store's own tools (docs/operations.md, Backups)"}

// serveBackup streams Backup as a tar file to an operator of the admin
// role (a write for the role table, as the copy holds every secret the log
// seals and every personal-data key).
func (n *Node) serveBackup(w http.ResponseWriter, r *http.Request) {
	if _, err := n.admin.Operator(r); err != nil {
		httpapi.Error(w, r, err)
		return
	}
	if n.backup == nil {
		httpapi.Error(w, r, errBackupShared)
		return
	}
	w.Header().Set("Content-Type", "application/x-tar")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="platform-backup-%s.tar"`, time.Now().UTC().Format("20060102T150405Z")))
	w.Header().Set("Cache-Control", "no-store")
	if err := n.backup.write(r.Context(), w); err != nil {
		// The status line is sent: the truncated tar (no end marker) is
		// refused by tar, and the log says why.
		n.log.Error("backup", "err", err)
	}
}

// write puts a consistent copy of an embedded node's data directory as a
// tar stream on w while the node runs; extracted into an empty directory it is
// a data directory a node starts on. The order of the parts makes the copy
// consistent without stopping writers:
//
//   - the followers' checkpoints (webhook creation, relay) first: older than
//     the log copy, they make the restored node redo a little idempotent
//     work, never skip an event;
//   - then the log (events.db), one position of it, whole;
//   - then the personal-data keys: a key is durable before any event sealed
//     with it is appended, so every key the copied log needs is there (a key
//     destroyed in between is an erasure that happened before the copy
//     finished: that person's data stays unreadable in the restore);
//   - then the replay guard (nonces.log, append-only; a torn last record is
//     dropped when it is opened).
//
// The master key, the tokens and the read-model snapshot are not copied:
// the master key is kept apart from what it seals (give the restored node
// the same PLATFORM_MASTER_KEY or master.key), tokens come from the
// environment or are made anew, and the read models are rebuilt from the
// log at start.
func (b *dataBackup) write(ctx context.Context, w io.Writer) error {
	tw := newTarParts(w)
	if err := b.writeCheckpoints(tw); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err := b.log.Snapshot(func(size int64, write func(io.Writer) error) error {
		if err := tw.header("events.db", size); err != nil {
			return err
		}
		return write(tw.out)
	})
	if err != nil {
		return fmt.Errorf("backup: event log: %w", err)
	}
	if err := b.writeKeys(tw); err != nil {
		return err
	}
	if err := b.writeNonces(tw); err != nil {
		return err
	}
	return tw.finish()
}

// writeCheckpoints adds the followers' checkpoint files that exist.
func (b *dataBackup) writeCheckpoints(tw *tarParts) error {
	for _, name := range []string{webhookCreationCheckpointFile, relay.FeedCheckpointFile, relay.CheckpointFile} {
		body, err := os.ReadFile(filepath.Join(b.dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("backup: %w", err)
		}
		if err := tw.put(name, body); err != nil {
			return fmt.Errorf("backup: %w", err)
		}
	}
	return nil
}

// writeKeys adds the personal-data key log when the keys are files here.
func (b *dataBackup) writeKeys(tw *tarParts) error {
	if b.keys == nil {
		return nil
	}
	// Copied to a local file first: the key store's writers wait while
	// it is read, so not while a remote client reads the stream.
	tmp, err := os.CreateTemp(b.dir, ".backup-keys-*")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	size, err := b.keys.Backup(tmp)
	if err != nil {
		return fmt.Errorf("backup: personal-data keys: %w", err)
	}
	return tw.copyPart(path.Join("keys", keyfiles.LogName), tmp, size)
}

// writeNonces adds the replay guard's log, if there is one.
func (b *dataBackup) writeNonces(tw *tarParts) error {
	f, err := os.Open(filepath.Join(b.dir, "nonces.log"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return tw.copyPart("nonces.log", f, st.Size())
}

// tarParts writes a backup's parts to a tar stream, each with its digest
// in the manifest that finish writes last.
type tarParts struct {
	tw  *tar.Writer
	now time.Time
	m   backupManifest
	// out writes the current part to the tar and its digest.
	out io.Writer
}

func newTarParts(w io.Writer) *tarParts {
	tw := tar.NewWriter(w)
	now := time.Now()
	return &tarParts{tw: tw, now: now, m: backupManifest{Created: now.UTC()}, out: tw}
}

// header starts the part name of size bytes.
func (p *tarParts) header(name string, size int64) error {
	p.m.close()
	p.m.Parts = append(p.m.Parts, backupPart{Name: name, Size: size})
	p.m.hash = sha256.New()
	p.out = io.MultiWriter(p.tw, p.m.hash)
	return p.tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: p.now, Typeflag: tar.TypeReg, Format: tar.FormatPAX})
}

// put adds body as the part name.
func (p *tarParts) put(name string, body []byte) error {
	if err := p.header(name, int64(len(body))); err != nil {
		return err
	}
	_, err := p.out.Write(body)
	return err
}

// copyPart adds the first size bytes of f as name.
func (p *tarParts) copyPart(name string, f *os.File, size int64) error {
	if err := p.header(name, size); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if _, err := io.Copy(p.out, io.NewSectionReader(f, 0, size)); err != nil {
		return fmt.Errorf("backup: %s: %w", name, err)
	}
	return nil
}

// finish writes the manifest and ends the tar. The manifest comes last: a
// copy cut short has none, so a reader can tell a whole backup from a
// truncated one.
func (p *tarParts) finish() error {
	p.m.close()
	body, err := json.MarshalIndent(p.m, "", "  ")
	if err != nil {
		return err
	}
	if err := p.tw.WriteHeader(&tar.Header{Name: backupManifestName, Mode: 0o600, Size: int64(len(body)), ModTime: p.now, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return err
	}
	if _, err := p.tw.Write(body); err != nil {
		return err
	}
	return p.tw.Close()
}

// backupManifestName is the last entry of a backup: what it holds, with each
// part's size and SHA-256, so a reader checks that the copy is whole.
const backupManifestName = "backup-manifest.json"

// backupPart is one file of a backup.
type backupPart struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

type backupManifest struct {
	Created time.Time    `json:"created"`
	Parts   []backupPart `json:"parts"`
	hash    hash.Hash
}

// close records the digest of the part being written.
func (m *backupManifest) close() {
	if m.hash != nil {
		m.Parts[len(m.Parts)-1].SHA256 = hex.EncodeToString(m.hash.Sum(nil))
		m.hash = nil
	}
}

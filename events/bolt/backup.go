package bolt

import (
	"io"

	"go.etcd.io/bbolt"
)

// Snapshot hands f the size of a consistent copy of the log as it stands
// and a function that writes that copy: a read transaction pins one state
// of the file while appends go on, so a running node's log is backed up at
// one position, whole. The copy opens with Open like the file itself.
// Pages that appends free while f runs are reused only after it returns,
// so a slow reader grows the file meanwhile.
func (s *Store) Snapshot(f func(size int64, write func(io.Writer) error) error) error {
	return s.db.View(func(tx *bbolt.Tx) error {
		return f(tx.Size(), func(w io.Writer) error {
			_, err := tx.WriteTo(w)
			return err
		})
	})
}

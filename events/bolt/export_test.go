package bolt

import (
	"time"

	bbolt "go.etcd.io/bbolt"
)

// Commits is how many transactions of s wrote something.
func Commits(s *Store) uint64 { return s.commits.Load() }

// SetWindow replaces s's group commit window (before its first append).
func SetWindow(s *Store, window func(lastCommit time.Duration) time.Duration) { s.window = window }

// Decoded is how many records s decoded from bbolt for catch-up reads.
func Decoded(s *Store) uint64 { return s.decoded.Load() }

// TxStats is the sum of the statistics of s's committed transactions.
func TxStats(s *Store) bbolt.TxStats { return s.db.Stats().TxStats }

// SetMigrateChunk sets how many revision keys one migrating transaction
// moves, and returns the setting to restore.
func SetMigrateChunk(n int) (restore func()) {
	was := migrateChunk
	migrateChunk = n
	return func() { migrateChunk = was }
}

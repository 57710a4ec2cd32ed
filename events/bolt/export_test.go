package bolt

import "time"

// Commits is how many transactions of s wrote something.
func Commits(s *Store) uint64 { return s.commits.Load() }

// SetWindow replaces s's group commit window (before its first append).
func SetWindow(s *Store, window func(lastCommit time.Duration) time.Duration) { s.window = window }

// Decoded is how many records s decoded from bbolt for catch-up reads.
func Decoded(s *Store) uint64 { return s.decoded.Load() }

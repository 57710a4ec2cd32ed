// Package sharedguard checks, in tests, that nobody writes into bytes the
// node shares between its followers: events/bolt hands every subscription
// the same record bytes and privacy the same decrypted plaintext, which
// consumers may only read. With the guard on, the sharers keep a checksum
// of each shared value and check it when they let go of it (eviction, close);
// a value found changed is a violation. It costs a CRC per shared value, so
// only tests turn it on (the e2e packages' TestMain, e2e/harness.Main, for
// its whole run, which drives every follower over the embedded log).
package sharedguard

import (
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"sync/atomic"
)

var (
	on         atomic.Bool
	violations struct {
		sync.Mutex
		errs []error
	}
	table = crc32.MakeTable(crc32.Castagnoli)
)

// On turns the guard on for this process (tests only: a CRC per shared value).
func On() { on.Store(true) }

// Enabled says whether sharers must record and check checksums.
func Enabled() bool { return on.Load() }

// Sum is the checksum of a shared value made of parts (e.g. data and meta).
func Sum(parts ...[]byte) uint32 {
	var sum uint32
	for _, p := range parts {
		sum = crc32.Update(sum, table, p)
	}
	return sum
}

// Check records a violation if the value's parts no longer have sum; what
// names the value in the report.
func Check(sum uint32, what func() string, parts ...[]byte) {
	if Sum(parts...) == sum {
		return
	}
	violations.Lock()
	defer violations.Unlock()
	violations.errs = append(violations.errs, fmt.Errorf("sharedguard: a consumer wrote into the shared bytes of %s", what()))
}

// Violations reports every shared value found changed, so the test that
// turned the guard on fails when a consumer wrote into shared bytes.
func Violations() error {
	violations.Lock()
	defer violations.Unlock()
	return errors.Join(violations.errs...)
}

// Reset forgets the violations found so far (for a test that provokes one).
func Reset() {
	violations.Lock()
	defer violations.Unlock()
	violations.errs = nil
}

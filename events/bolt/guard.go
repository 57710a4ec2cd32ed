package bolt

import (
	"fmt"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/sharedguard"
)

// The guard of shared bytes (internal/sharedguard): with it on, the ring
// and the catch-up cache keep a checksum of every record they share and
// check it when the record leaves them and when the store closes.

func guarding() bool { return sharedguard.Enabled() }

func sumOf(r *events.Recorded) uint32 { return sharedguard.Sum(r.Data, r.Meta) }

func sumsOf(recs []events.Recorded) []uint32 {
	sums := make([]uint32, len(recs))
	for i := range recs {
		sums[i] = sumOf(&recs[i])
	}
	return sums
}

func checkSum(where string, r *events.Recorded, sum uint32) {
	sharedguard.Check(sum, func() string {
		return fmt.Sprintf("event %s (%s at %s, events/bolt %s)", r.ID, r.Type, r.Position, where)
	}, r.Data, r.Meta)
}

func checkSums(where string, recs []events.Recorded, sums []uint32) {
	for i := range recs {
		checkSum(where, &recs[i], sums[i])
	}
}

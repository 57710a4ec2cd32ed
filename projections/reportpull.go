package projections

import (
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
)

// ReportPullQuery is one report pull's whole read, for a store that keeps
// the replay guard's nonces, the shared rate-limit buckets and the reports
// read model in one database: use the nonce (as nonces.Store.Use), then,
// only if it was fresh, make the rate limit's take (Take, as
// ratelimit/postgres's Bucket.Take), then, only if it granted a token,
// read the report of the app, with the reports read model's checkpoint
// (and the log's head when the store sees it), all in one round trip. A
// nil Take is a pull this node admitted from its lease of the app's tokens
// (ratelimit.Leased): the statement takes nothing and reads the report
// once the nonce is fresh.
type ReportPullQuery struct {
	AppID, ReportID int64
	NonceScope      string
	Nonce           string
	NonceExpires    time.Time
	Take            *ratelimit.Take
}

// ReportPull is what ReportPullQuery's round trip found. Fresh is false for
// a nonce already used (nothing else was done); Grant is the bucket's answer
// to a fresh nonce's take (zero without one); Found says whether the app has
// the report (read only when the pull was admitted).
type ReportPull struct {
	Fresh      bool
	Grant      ratelimit.Grant
	Checkpoint events.Position
	Head       events.Position
	HeadKnown  bool
	Found      bool
	Report     Report
}

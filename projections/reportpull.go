package projections

import (
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
)

// ReportPullQuery is one report pull's whole read, for a store that keeps
// the replay guard's nonces, the shared rate-limit buckets and the reports
// read model in one database: use the nonce (as nonces.Store.Use), then,
// only if it was fresh, take one token from the bucket (as
// ratelimit/postgres's Bucket.Allow), then, only if one was granted, read
// the report of the app, with the reports read model's checkpoint (and the
// log's head when the store sees it), all in one round trip.
type ReportPullQuery struct {
	AppID, ReportID int64
	NonceScope      string
	Nonce           string
	NonceExpires    time.Time
	Bucket          ratelimit.BucketSpec
	BucketKey       string
}

// ReportPull is what ReportPullQuery's round trip found. Fresh is false for
// a nonce already used (nothing else was done); Grant is the bucket's answer
// to a fresh nonce; Found says whether the app has the report (read only when
// the grant was a token).
type ReportPull struct {
	Fresh      bool
	Grant      ratelimit.Grant
	Checkpoint events.Position
	Head       events.Position
	HeadKnown  bool
	Found      bool
	Report     Report
}

package node

import "time"

// The defaults Open gives a zero Config field. cmd/platform's settings table
// shows these same values (and the -help text and docs/configuration.md are
// generated from it), so each number is written here only. Defaults owned by
// a port live beside it (lease.DefaultTTL, webhooks.DefaultPerEndpoint,
// portal.DefaultSessionIdle, relaykafka.DefaultTopic, ...).
const (
	DefaultTimezone         = "Asia/Shanghai"  // zone of Y-m-d H:i:s times
	DefaultWebhookWorkers   = 64               // webhook attempts in flight at once per node
	DefaultReportPullLimit  = 60               // report pulls per minute per app (the spec's)
	DefaultPartnerRateLimit = 6000             // scheme M requests per minute per app
	DefaultVerifyCooldown   = 10 * time.Second // DUPLICATE_FULFILLMENT window
)

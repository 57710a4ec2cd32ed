package harness

import (
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/node"
)

// clusterKey is the master key every node of a test cluster shares.
const clusterKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// ClusterConfig is one node of a cluster on the Postgres event store and
// Postgres read models in database db.
func ClusterConfig(t testing.TB, db, id string, ttl time.Duration) node.Config {
	return node.Config{
		DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db, MasterKey: clusterKey,
		AdminToken: "adm_cluster", InternalToken: "int_cluster", NodeID: id, LeaseTTL: ttl,
		WebhookAllowLoopback: true, PartnerRateLimit: -1,
	}
}

func (a *App) On(p *Platform) *App {
	b := *a
	b.P = p
	return &b
}

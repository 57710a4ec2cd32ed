package harness

import (
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/node"
)

// Attempts sums a node's recorded webhook attempts.
func Attempts(t testing.TB, n *node.Node) int {
	t.Helper()
	mfs, err := n.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, mf := range mfs {
		if mf.GetName() == "platform_webhook_attempts_total" {
			for _, m := range mf.GetMetric() {
				total += int(m.GetCounter().GetValue())
			}
		}
	}
	return total
}

// ClusterConfigs returns configs of n nodes sharing one Postgres database
// as event store and read models, one master key and one operator token.
func ClusterConfigs(t testing.TB, n int) []node.Config {
	db := NodeDB(t)
	var key [32]byte
	_, _ = rand.Read(key[:])
	cfgs := make([]node.Config, n)
	for i := range cfgs {
		cfgs[i] = node.Config{
			DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db, MasterKey: hex.EncodeToString(key[:]),
			AdminToken: "adm_cluster", WebhookAllowLoopback: true,
		}
	}
	return cfgs
}

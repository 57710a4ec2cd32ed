package harness

import (
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/node"
)

// TwoNodes opens two nodes on one Postgres event store and one Postgres
// read-model store, each with its own data directory and the same master key
// and operator token, as a cluster runs them; tweak adjusts both configs.
func TwoNodes(t *testing.T, tweak func(*node.Config)) (a, b *Platform) {
	t.Helper()
	db := NodeDB(t)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	cfg := func() node.Config {
		c := node.Config{DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db, MasterKey: hex.EncodeToString(key), AdminToken: "adm_cluster_test"}
		if tweak != nil {
			tweak(&c)
		}
		return c
	}
	return Start(t, cfg()), Start(t, cfg())
}

const Probe = "/open/v1/channel/users/0?channel_user_id=nobody"

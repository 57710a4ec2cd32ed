package privacy_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

func openNode(cfg node.Config) (*node.Node, error) {
	cfg.Logger = harness.QuietLogger()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return node.Open(ctx, cfg)
}

// TestMasterKeyIsNeverReplacedUnderSealedSecrets: a node whose log holds
// sealed secrets refuses to start without the key they were sealed with,
// instead of creating a new key the apps projection could never use.
func TestMasterKeyIsNeverReplacedUnderSealedSecrets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyPath := filepath.Join(dir, "master.key")
	p := harness.Start(t, node.Config{DataDir: dir})
	if _, err := os.Stat(keyPath); err != nil {
		t.Fatalf("an empty log got no key file: %v", err)
	}
	a := p.CreateApp("sealed")
	p.Stop()
	original, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}

	// No key at all: refused, and no new key file is left behind.
	if err := os.Remove(keyPath); err != nil {
		t.Fatal(err)
	}
	if n, err := openNode(node.Config{DataDir: dir}); err == nil {
		n.Close()
		t.Fatal("started without the master key of a log holding sealed secrets")
	} else if msg := err.Error(); !strings.Contains(msg, "PLATFORM_MASTER_KEY") || !strings.Contains(msg, "master.key") || !strings.Contains(msg, "already holds events") {
		t.Fatalf("unclear refusal: %v", err)
	}
	if _, err := os.Stat(keyPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a key file was created anyway: %v", err)
	}

	// Another key, in the file or in PLATFORM_MASTER_KEY: refused at start.
	other := strings.Repeat("5a", 32)
	if err := os.WriteFile(keyPath, []byte(other+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []node.Config{{DataDir: dir}, {DataDir: dir, MasterKey: other}} {
		n, err := openNode(cfg)
		if err == nil {
			n.Close()
			t.Fatalf("started with a master key that cannot open the log's secrets (env set: %v)", cfg.MasterKey != "")
		}
		if msg := err.Error(); !strings.Contains(msg, "cannot open") || !strings.Contains(msg, "PLATFORM_MASTER_KEY") || !strings.Contains(msg, "app ") {
			t.Fatalf("unclear refusal: %v", err)
		}
	}

	// The right key, given as PLATFORM_MASTER_KEY: the app signs in again.
	q := harness.Start(t, node.Config{DataDir: dir, MasterKey: strings.TrimSpace(string(original))})
	a.P = q
	res := a.Do("GET", "/open/v1/channel/users/0?channel_user_id=nobody", nil)
	if res.Status == http.StatusUnauthorized || res.Status >= 500 {
		t.Fatalf("the app's signature no longer works with its key: %d %s", res.Status, res.Raw)
	}
}

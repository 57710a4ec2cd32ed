package privacy_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	keystore "github.com/healthtech/partner-open-platform/internal/datakeys"
	keyfiles "github.com/healthtech/partner-open-platform/internal/datakeys/files"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

// TestMasterKeyRotation: data written under key A stays readable on a node
// holding B as current and A as previous; POST /admin/v1/keys/rotate
// re-seals every data key with B; afterwards B alone opens every data key,
// while the app secrets sealed in the (immutable) events still need A.
func TestMasterKeyRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := harness.Start(t, node.Config{DataDir: dir})
	a := p.CreateApp("partner")
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg)
	userPath := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
	before := a.Expect("GET", userPath, nil, http.StatusOK, "0")
	p.Stop()

	keyA, err := os.ReadFile(filepath.Join(dir, "master.key"))
	if err != nil {
		t.Fatal(err)
	}
	keyB := strings.Repeat("b7", 32)
	if err := os.WriteFile(filepath.Join(dir, "master.key"), []byte(keyB+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// B alone cannot open the log's app secrets.
	if n, err := openNode(node.Config{DataDir: dir}); err == nil {
		n.Close()
		t.Fatal("started with B alone over secrets sealed by A")
	} else if !strings.Contains(err.Error(), "PLATFORM_MASTER_KEY_PREVIOUS") {
		t.Fatalf("the refusal does not point at previous keys: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "master.key.previous"), keyA, 0o600); err != nil {
		t.Fatal(err)
	}

	q := harness.Start(t, node.Config{DataDir: dir})
	a.P = q
	after := a.Expect("GET", userPath, nil, http.StatusOK, "0")
	if dataOf(after.Raw) != dataOf(before.Raw) {
		t.Fatalf("personal data reads differently under B+A:\n%s\n%s", before.Raw, after.Raw)
	}
	var rot struct {
		MasterKeyID string `json:"master_key_id"`
		Resealed    int    `json:"resealed"`
	}
	q.Admin("POST", "/admin/v1/keys/rotate", nil).Data(t, &rot)
	rawB, _ := secrets.ParseKey(keyB)
	if rot.MasterKeyID != secrets.KeyID(rawB) || rot.Resealed < 1 {
		t.Fatalf("rotate answered %+v", rot)
	}
	q.Admin("POST", "/admin/v1/keys/rotate", nil).Data(t, &rot)
	if rot.Resealed != 0 {
		t.Fatalf("a second rotation re-sealed %d keys", rot.Resealed)
	}
	// The binding streams' names did not change with the master key: the
	// user registered under A is found again, not registered twice.
	var again harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusOK, "0").Data(t, &again)
	if again.OpenUserID != reg.OpenUserID || again.Created {
		t.Fatalf("re-register after the rotation: %+v, want open_user_id %d", again, reg.OpenUserID)
	}
	// New personal data is sealed under B too.
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-2"), http.StatusCreated, "0")
	q.Stop()

	// Only B: every data key opens (the events are untouched).
	backend, err := keyfiles.Open(filepath.Join(dir, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	onlyB, _ := secrets.New(rawB)
	ks := keystore.New(backend, onlyB)
	n := 0
	err = backend.List(context.Background(), func(r keystore.Record) error {
		n++
		if r.MasterKeyID != onlyB.KeyID() {
			return fmt.Errorf("data key %s still sealed by %s", r.KeyID, r.MasterKeyID)
		}
		_, err := ks.ByID(context.Background(), r.KeyID)
		return err
	})
	if err != nil || n < 2 {
		t.Fatalf("%d keys: %v", n, err)
	}

	// Back on a node with A kept as previous, the app still signs in.
	r := harness.Start(t, node.Config{DataDir: dir})
	a.P = r
	if got := a.Expect("GET", userPath, nil, http.StatusOK, "0"); dataOf(got.Raw) != dataOf(before.Raw) {
		t.Fatalf("personal data reads differently after the rotation:\n%s\n%s", before.Raw, got.Raw)
	}
}

// dataOf is an answer without its timestamp.
func dataOf(raw []byte) string {
	s, _, _ := strings.Cut(string(raw), `"timestamp"`)
	return s
}

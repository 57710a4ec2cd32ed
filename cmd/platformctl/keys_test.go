package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/node"
)

// TestKeysRotateAgainstARealNode rotates the master key as an operator
// does: a node made data keys under the old key; restarted with a new key
// and the old one as previous, `platformctl keys rotate` re-seals them, a
// second run has nothing left, and a node with only the new key opens them.
func TestKeysRotateAgainstARealNode(t *testing.T) {
	dir := t.TempDir()
	oldKey := hex.EncodeToString(bytes.Repeat([]byte{1}, 32))
	newKey := hex.EncodeToString(bytes.Repeat([]byte{2}, 32))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	open := func(current, previous string) *node.Node {
		// Snapshots off: a read-model snapshot has a data key of its own,
		// which would make the count below depend on when one was written.
		n, err := node.Open(ctx, node.Config{DataDir: dir, MasterKey: current, MasterKeyPrevious: previous, Logger: quiet, SnapshotInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	n := open(oldKey, "")
	made := map[string]string{}
	for _, subject := range []string{"user-1", "user-2"} {
		k, err := n.Keys.DataKey(ctx, subject)
		if err != nil {
			t.Fatal(err)
		}
		made[subject] = k.ID
	}
	n.Close()

	n = open(newKey, oldKey)
	srv := httptest.NewServer(n.Handler)
	ctl := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(append([]string{"--server", srv.URL, "--token", n.AdminToken}, args...), &out, &errb, func(string) string { return "" })
		return out.String(), errb.String(), code
	}
	// Two users' keys and the platform's two records beside them
	// (node.PseudonymSecret, node.DecisionMailsFromStartFlag).
	if out, errOut, code := ctl("keys", "rotate"); code != 0 || !strings.Contains(out, "re-sealed 4 personal-data key(s)") {
		t.Fatalf("rotate: %d\n%s\n%s", code, out, errOut)
	}
	if out, _, code := ctl("keys", "rotate"); code != 0 || !strings.Contains(out, "re-sealed 0 ") {
		t.Fatalf("second rotate: %d\n%s", code, out)
	}
	if out, errOut, code := ctl("--json", "keys", "rotate"); code != 0 || !strings.Contains(out, `"resealed": 0`) {
		t.Fatalf("rotate --json: %d\n%s\n%s", code, out, errOut)
	}
	if _, errOut, code := ctl("keys", "rotate", "now"); code != 2 || !strings.Contains(errOut, "takes no arguments") {
		t.Fatalf("rotate with an argument: %d %s", code, errOut)
	}
	if _, errOut, code := ctl("keys"); code != 2 || !strings.Contains(errOut, "rotate") {
		t.Fatalf("keys alone: %d %s", code, errOut)
	}
	var wrong bytes.Buffer
	if code := run([]string{"--server", srv.URL, "--token", "adm_wrong", "keys", "rotate"}, io.Discard, &wrong, func(string) string { return "" }); code != 1 {
		t.Fatalf("wrong token: %d %s", code, wrong.String())
	}
	srv.Close()
	n.Close()

	n = open(newKey, "") // the old key is no longer needed for the data keys
	defer n.Close()
	for subject, id := range made {
		if k, err := n.Keys.ByID(ctx, id); err != nil || k.Subject != subject {
			t.Fatalf("%s after rotation with only the new key: %v", subject, err)
		}
	}
}

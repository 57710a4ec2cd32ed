package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/node"
)

// TestBackupAgainstARealNode: platformctl backup saves a running embedded
// node's copy, checked against its manifest, and lists its parts; a copy
// cut short or altered is refused and leaves no file.
func TestBackupAgainstARealNode(t *testing.T) {
	n, err := node.Open(context.Background(), node.Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	srv := httptest.NewServer(n.Handler)
	defer srv.Close()
	ctl := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(append([]string{"--server", srv.URL, "--token", n.AdminToken}, args...), &out, &errb, func(string) string { return "" })
		return out.String(), errb.String(), code
	}
	if out, errOut, code := ctl("apps", "create", "--name", "backed up"); code != 0 {
		t.Fatalf("create: %d %s %s", code, out, errOut)
	}
	file := filepath.Join(t.TempDir(), "b.tar")
	out, errOut, code := ctl("backup", "-o", file)
	if code != 0 || !strings.Contains(out, "events.db") || !strings.Contains(out, "keys/keys.log") {
		t.Fatalf("backup: %d\n%s\n%s", code, out, errOut)
	}
	whole, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verifyBackup(bytes.NewReader(whole)); err != nil {
		t.Fatalf("the saved backup does not verify: %v", err)
	}
	if _, err := verifyBackup(bytes.NewReader(whole[:len(whole)/2])); err == nil {
		t.Error("a backup cut in half verified")
	}
	altered := bytes.Clone(whole)
	altered[1024] ^= 0xff // inside the first part
	if _, err := verifyBackup(bytes.NewReader(altered)); err == nil {
		t.Error("an altered backup verified")
	}
	if _, errOut, code := ctl("backup"); code != 2 || !strings.Contains(errOut, "-o FILE") {
		t.Errorf("backup without -o: %d %s", code, errOut)
	}
	var o, e bytes.Buffer
	if code := run([]string{"--server", srv.URL, "--token", "adm_wrong", "backup", "-o", filepath.Join(t.TempDir(), "x.tar")}, &o, &e, func(string) string { return "" }); code != 1 || !strings.Contains(e.String(), "HTTP_401") {
		t.Errorf("backup with a wrong token: %d %s", code, e.String())
	}
}

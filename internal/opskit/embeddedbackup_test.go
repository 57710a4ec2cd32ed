package opskit

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// takeBackup calls POST /admin/v1/backup as platformctl backup does.
func takeBackup(t *testing.T, h http.Handler, token string) (int, http.Header, []byte) {
	t.Helper()
	req := httptest.NewRequest("POST", "/admin/v1/backup", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Header(), rec.Body.Bytes()
}

// extract unpacks a backup into dir and returns the manifest's part names.
func extract(t *testing.T, tarball []byte, dir string) []string {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(tarball))
	var names []string
	last := ""
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		last = h.Name
		names = append(names, h.Name)
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if last != "backup-manifest.json" {
		t.Fatalf("the backup does not end with its manifest: %v", names)
	}
	return names
}

// TestEmbeddedBackupRestoresANode follows docs/operations.md for the
// embedded configuration: a backup taken over the admin API from a running
// node while writes go on, extracted into an empty directory, starts a node
// that serves the reads of the log it holds (a prefix of the source's log,
// whole), and continues that log without loss or duplicates.
func TestEmbeddedBackupRestoresANode(t *testing.T) {
	masterKey := strings.Repeat("cd", 32)
	a, err := node.Open(context.Background(), node.Config{DataDir: t.TempDir(), MasterKey: masterKey, AdminToken: "adm_backupSource", Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	oa := operator{t, a, a.AdminToken}
	seed(oa, "EMB")
	before := oa.log()
	apps := string(oa.must("GET", "/admin/v1/apps", nil))

	// Writes go on while the backup is taken.
	var wg sync.WaitGroup
	stop, started := make(chan struct{}), make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			if i == 5 {
				close(started)
			}
			select {
			case <-stop:
				return
			default:
			}
			code, data := oa.call("POST", "/admin/v1/goods", map[string]any{"goods_code": fmt.Sprintf("LIVE-%d", i), "goods_name": "written during the backup"})
			if code >= 300 {
				t.Errorf("write during the backup: %d %s", code, data)
				return
			}
		}
	}()
	<-started
	code, hdr, body := takeBackup(t, a.Handler, a.AdminToken)
	close(stop)
	wg.Wait()
	if code != http.StatusOK || hdr.Get("Content-Type") != "application/x-tar" {
		t.Fatalf("backup: %d %s %.300s", code, hdr.Get("Content-Type"), body)
	}
	dir := t.TempDir()
	names := extract(t, body, dir)
	for _, want := range []string{"events.db", "keys/keys.log", "nonces.log"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("the backup holds %v, no %s", names, want)
		}
	}
	for _, secret := range []string{"master.key", "admin.token"} {
		if strings.Contains(strings.Join(names, " "), secret) {
			t.Errorf("the backup holds %s: the master key and tokens are kept apart", secret)
		}
	}
	source := oa.log()

	b, err := node.Open(context.Background(), node.Config{DataDir: dir, MasterKey: masterKey, AdminToken: "adm_backupRestore", Logger: quiet()})
	if err != nil {
		t.Fatalf("a node does not start on the restored copy: %v", err)
	}
	defer b.Close()
	ob := operator{t, b, b.AdminToken}
	waitReady(t, b.Handler)
	restored := ob.log()
	if len(restored) < len(before) || len(restored) > len(source) {
		t.Fatalf("restored log has %d events; before the backup %d, source now %d", len(restored), len(before), len(source))
	}
	liveGoods := 0
	for i, e := range restored {
		if e != source[i] {
			t.Fatalf("restored event %d is %+v, the source's is %+v: not a prefix of the log", i, e, source[i])
		}
		if e.Type == "goods.created" && strings.HasPrefix(e.Stream, "goods-LIVE") {
			liveGoods++
		}
	}
	t.Logf("backup of %d bytes taken during writes holds %d events (%d written during it)", len(body), len(restored), len(restored)-len(before))
	if got := string(ob.must("GET", "/admin/v1/apps", nil)); got != apps {
		t.Errorf("restored apps\n%s\nsource apps\n%s", got, apps)
	}
	var goods struct {
		Goods []struct {
			GoodsCode string `json:"goods_code"`
		} `json:"goods"`
	}
	if err := json.Unmarshal(ob.must("GET", "/admin/v1/goods", nil), &goods); err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, g := range goods.Goods {
		if strings.HasPrefix(g.GoodsCode, "LIVE-") {
			live++
		}
	}
	if liveGoods < 5 {
		t.Errorf("the restored log holds %d goods written during the writes, want at least the 5 before the backup", liveGoods)
	}
	if len(goods.Goods) != 2+live || live != liveGoods {
		t.Errorf("restored node lists %d goods (%d live); its log holds 2 seeded and %d live goods.created", len(goods.Goods), live, liveGoods)
	}
	continues(t, restored, ob)
}

// Only an admin gets a backup: it holds every sealed secret and
// personal-data key. A node on a shared store says to use the store's tools.
func TestBackupIsForAdminsOfEmbeddedNodes(t *testing.T) {
	n, err := node.Open(context.Background(), node.Config{DataDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	o := operator{t, n, n.AdminToken}
	var support struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(o.must("POST", "/admin/v1/operators", map[string]any{"name": "desk", "role": "support"}), &support); err != nil || support.Token == "" {
		t.Fatalf("support operator: %v %+v", err, support)
	}
	waitReady(t, n.Handler)
	for _, c := range []struct {
		token string
		code  int
		want  string
	}{{"", 401, "HTTP_401"}, {"adm_wrong", 401, "HTTP_401"}, {support.Token, 403, "ROLE_FORBIDDEN"}} {
		code, _, body := takeBackup(t, n.Handler, c.token)
		if code != c.code || !strings.Contains(string(body), c.want) {
			t.Errorf("token %q: %d %s, want %d %s", c.token, code, body, c.code, c.want)
		}
	}

	if os.Getenv(pgtest.EnvURL) == "" && os.Getenv(pgtest.EnvRequire) != "1" {
		t.Skip("shared-store refusal needs " + pgtest.EnvURL)
	}
	url := pgtest.New(t)
	pg, err := node.Open(context.Background(), node.Config{DataDir: t.TempDir(), EventStoreURL: url, PostgresURL: url, AdminToken: "adm_pg", MasterKey: strings.Repeat("ab", 32), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if code, _, body := takeBackup(t, pg.Handler, "adm_pg"); code != http.StatusNotFound || !strings.Contains(string(body), "shared store") {
		t.Errorf("backup on Postgres: %d %s", code, body)
	}
}

package node_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// TestStartupThatFailsMidwayReleasesWhatItOpened: a start refused after
// some ports were opened (a master key that cannot open the log's secrets,
// an SMTP URL the mail sender refuses) closes what it had opened, so the
// operator's corrected start finds the data directory free (the event log
// and the replay guard are locked while open), and leaves the read-model
// snapshot of the last good stop as it was, so that start restores it
// instead of replaying the whole log.
func TestStartupThatFailsMidwayReleasesWhatItOpened(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	good := node.Config{DataDir: dir, Logger: quiet}
	open := func(cfg node.Config) (*node.Node, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return node.Open(ctx, cfg)
	}

	n, err := open(good)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("POST", "/admin/v1/apps", strings.NewReader(`{"name":"before the failed start","scopes":["orders"]}`))
	req.Header.Set("Authorization", "Bearer "+n.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	n.Handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		t.Fatalf("create app: %d %s", rec.Code, rec.Body)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	snapshot := filepath.Join(dir, node.SnapshotFile)
	before, err := os.ReadFile(snapshot)
	if err != nil {
		t.Fatalf("no snapshot after a graceful stop: %v", err)
	}

	otherKey := strings.Repeat("ab", 32)
	for name, bad := range map[string]func(*node.Config){
		"master key that cannot open the log": func(c *node.Config) { c.MasterKey = otherKey },
		"SMTP URL refused":                    func(c *node.Config) { c.Portal.SMTPURL = "ftp://mail.example.com" },
	} {
		cfg := good
		bad(&cfg)
		began := time.Now()
		if n, err := open(cfg); err == nil {
			n.Close()
			t.Fatalf("%s: the node opened", name)
		}
		if took := time.Since(began); took > 30*time.Second {
			t.Errorf("%s: the refusal took %s", name, took)
		}
		after, err := os.ReadFile(snapshot)
		if err != nil || !bytes.Equal(after, before) {
			t.Fatalf("%s: the snapshot of the last good stop changed (%d bytes before, %d after, %v)", name, len(before), len(after), err)
		}
	}

	n, err = open(good)
	if err != nil {
		t.Fatalf("the corrected start: %v", err)
	}
	defer n.Close()
	if got := n.Adapters["read models"]; !strings.Contains(got, "restored from") {
		t.Errorf("read models %q: want restored from the snapshot", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(n.Apps.List()); got != 1 {
		t.Errorf("%d apps after the corrected start, want 1", got)
	}
}

// TestStartupThatFailsMidwayOnPostgresLeavesNoConnection: a start refused
// after the Postgres event store, key store, read models and replay guard
// were opened (an SMTP URL the mail sender refuses) leaves no connection to
// the database behind, and neither does a good start once closed.
func TestStartupThatFailsMidwayOnPostgresLeavesNoConnection(t *testing.T) {
	db := pgtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// others waits (bounded) for the database to hold no connection but
	// this test's own: a closed pool's backends leave a moment after.
	others := func() int {
		var n int
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 || time.Now().After(deadline) {
				return n
			}
		}
	}
	cfg := node.Config{DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db, AdminToken: "adm_openfail",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	bad := cfg
	bad.Portal.SMTPURL = "ftp://mail.example.com"
	if n, err := node.Open(ctx, bad); err == nil {
		n.Close()
		t.Fatal("the node opened with an SMTP URL the mail sender refuses")
	} else if !strings.Contains(err.Error(), "PLATFORM_SMTP_URL") {
		t.Fatalf("refusal %v, want one naming PLATFORM_SMTP_URL", err)
	}
	if n := others(); n != 0 {
		t.Fatalf("%d connections to the database after the refused start, want 0", n)
	}
	n, err := node.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("the corrected start: %v", err)
	}
	if err := n.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if n := others(); n != 0 {
		t.Fatalf("%d connections to the database after Close, want 0", n)
	}
}

// Package pgtest gives each test its own PostgreSQL database on a throwaway
// server (empty, or a copy of a migrated template), so Postgres-backed tests
// never see each other's rows and can run in parallel.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the variable holding an admin URL to the test server;
// scripts/test.sh starts a server and sets it.
const EnvURL = "PLATFORM_TEST_POSTGRES_URL"

// EnvRequire, set to 1, turns a missing server into a failure instead of a
// skip, so CI can never pass without having run the Postgres tests.
const EnvRequire = "PLATFORM_REQUIRE_POSTGRES"

// New creates a fresh database for t, drops it when t ends, and returns its
// URL; without a server it skips t, or fails it in CI.
func New(t testing.TB) string {
	t.Helper()
	return create(t, server(t), "")
}

// server returns the admin URL of the test server; without one it skips t,
// or fails it in CI.
func server(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(EnvURL)
	if admin == "" {
		if os.Getenv("CI") == "true" || os.Getenv(EnvRequire) == "1" {
			t.Fatalf("Postgres tests required but %s is not set; run scripts/test.sh", EnvURL)
		}
		t.Skip("Postgres tests skipped: " + EnvURL + " is not set; run scripts/test.sh")
	}
	u, err := url.Parse(admin)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("%s must be a postgres:// URL, got %q", EnvURL, redact(admin))
	}
	return admin
}

// create makes a database of a random name (CREATE DATABASE name options),
// drops it when t ends, and returns its URL.
func create(t testing.TB, admin, options string) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("pgtest: random name: %v", err)
	}
	name := "t_" + hex.EncodeToString(b[:])

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := adminExec(ctx, admin, "CREATE DATABASE "+name+options); err != nil {
		t.Fatalf("pgtest: create database %s on %s: %v", name, redact(admin), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := adminExec(ctx, admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})

	u, _ := url.Parse(admin)
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}

func adminExec(ctx context.Context, admin, sql string) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// redact hides a password so that failures can print the URL.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return strings.Repeat("*", len(raw))
	}
	return u.Redacted()
}

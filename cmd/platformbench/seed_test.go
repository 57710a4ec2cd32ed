package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// TestSeedWritesASealedLogANodeReads seeds a small embedded log and checks
// what a rebuild would face: the counts seed reports match the log, every
// personal field is stored sealed (no name or e-mail in clear), and a node
// opened afresh on the directory decrypts them into its read model.
func TestSeedWritesASealedLogANodeReads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	var log bytes.Buffer
	if err := seedCmd(context.Background(), []string{"-data", dir, "-events", "600", "-apps", "4", "-webhook-share", "0.5", "-workers", "4", "-settle", "1s"}, &log); err != nil {
		t.Fatalf("seed: %v\n%s", err, log.String())
	}
	sum, err := readSeedSummary(dir + ".seed.json")
	if err != nil {
		t.Fatal(err)
	}
	if sum.Events < 600 || sum.Users < 10 || sum.Apps != 4 || sum.Endpoints != 2 || sum.Deliveries == 0 || sum.Received == 0 || sum.Received > sum.Deliveries {
		t.Fatalf("summary %+v: want ≥600 events, ≥10 users, 4 apps, 2 endpoints, deliveries, some of them received", sum)
	}

	n, err := node.Open(context.Background(), node.Config{DataDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.WaitCaughtUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	head, err := n.StoredEvents.Head(context.Background())
	if err != nil || head.Commit != sum.Events {
		t.Fatalf("log head %v (%v), summary says %d events", head, err, sum.Events)
	}
	stored, err := n.StoredEvents.ReadAll(context.Background(), events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]int64{}
	for _, r := range stored {
		types[r.Type]++
		if strings.Contains(string(r.Data), "Li Lei") || strings.Contains(string(r.Data), "@example.com") {
			t.Fatalf("%s stored a personal field in clear: %s", r.Type, r.Data)
		}
	}
	if types["webhook.delivery.created"] != sum.Deliveries || types["user.registered"] != sum.Types["user.registered"] || types["user.registered"] != sum.Users {
		t.Errorf("summary counts %d deliveries, %d registers, %d users; the log holds %v", sum.Deliveries, sum.Types["user.registered"], sum.Users, types)
	}
	for _, typ := range []string{"user.registered", "user.profile.updated", "user.family_member.created", "report.created", "webhook.delivery.created"} {
		if types[typ] == 0 {
			t.Errorf("no %s in the seeded log (types: %v)", typ, types)
		}
	}
	u, err := n.ReadModel.UserByChannelID(context.Background(), appOfFirstUser(t, n), "seed-user-0")
	if err != nil {
		t.Fatal(err)
	}
	if u.Name != "Li Lei" || u.Email == nil || *u.Email != "user0@example.com" {
		t.Fatalf("read model after a fresh start: %+v, want the decrypted name and e-mail", u)
	}
}

// appOfFirstUser is the app seed-user-0 registered with, read from the
// log through the node's decrypting store.
func appOfFirstUser(t *testing.T, n *node.Node) int64 {
	t.Helper()
	all, err := n.Events.ReadAll(context.Background(), events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range all {
		var m struct {
			AppID   int64  `json:"app_id"`
			Channel string `json:"channel_user_id"`
		}
		if r.Type == "user.registered" && json.Unmarshal(r.Data, &m) == nil && m.Channel == "seed-user-0" {
			return m.AppID
		}
	}
	t.Fatal("no user.registered of seed-user-0")
	return 0
}

package storage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/events/bolt"
	"github.com/healthtech/partner-open-platform/events/catalog"
	keystore "github.com/healthtech/partner-open-platform/internal/datakeys"
	keyfiles "github.com/healthtech/partner-open-platform/internal/datakeys/files"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/secrets"
	"github.com/healthtech/partner-open-platform/privacy"
)

// bigLogApp is what a built log's directory remembers of its app, so a
// benchmark can reuse a log built by an earlier run (building 1M events
// takes minutes on a shared machine).
type bigLogApp struct {
	ID     int64  `json:"app_id"`
	Key    string `json:"app_key"`
	Secret string `json:"app_secret"`
	Users  int    `json:"users"`
	Events int    `json:"events"`
	First  int64  `json:"first_open_user_id"`
}

// buildBigLog fills dir with an embedded node's data directory holding one
// app and users registered through the real commands (the same events,
// personal fields sealed per person, keys in the key log), each with a
// family group, a member and a profile update: five events per user, so
// 200,000 users make a 1M-event log. It writes straight through the event
// store with many concurrent writers (the bolt log commits them in groups),
// skipping HTTP, which makes it far faster than a load client. A directory
// already built (bigapp.json present) is reused as it is.
func buildBigLog(tb testing.TB, dir string, users int) bigLogApp {
	tb.Helper()
	var built bigLogApp
	if raw, err := os.ReadFile(filepath.Join(dir, "bigapp.json")); err == nil {
		if err := json.Unmarshal(raw, &built); err != nil {
			tb.Fatal(err)
		}
		return built
	}
	// A node makes the data directory (master key, tokens) and the app.
	p := harness.Start(tb, node.Config{DataDir: dir, PartnerRateLimit: -1})
	a := p.CreateApp("big")
	p.Stop()

	ctx := context.Background()
	store, err := bolt.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		tb.Fatal(err)
	}
	defer store.Close()
	master, _, err := secrets.LoadOrCreateKeyFile(filepath.Join(dir, "master.key"))
	if err != nil {
		tb.Fatal(err)
	}
	sealer, err := secrets.New(master)
	if err != nil {
		tb.Fatal(err)
	}
	backend, err := keyfiles.Open(filepath.Join(dir, "keys"))
	if err != nil {
		tb.Fatal(err)
	}
	defer backend.Close()
	ks := keystore.New(backend, sealer)
	priv := privacy.New(store, ks)
	reg := catalog.Registry()
	loc, _ := time.LoadLocation("Asia/Shanghai")
	ids := commands.NewAllocator(priv, reg, 500)
	ids.OnReserve(commands.KindUser, func(ctx context.Context, first, last int64) {
		subjects := make([]string, 0, last-first+1)
		for id := first; id <= last; id++ {
			subjects = append(subjects, commands.ErasureSubject(id))
		}
		_ = ks.Prepare(ctx, subjects)
	})
	names, err := node.OpenPseudonyms(context.Background(), ks)
	if err != nil {
		tb.Fatal(err)
	}
	cmds := commands.NewUsers(priv, reg, ids, names, time.Now, loc).WithKeys(ks).WithKeyWarmer(ks)
	meta := commands.Meta{AppID: a.ID, Actor: "app", RequestID: "biglog"}

	var next atomic.Int64
	var first atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if int(i) > users || failed.Load() != nil {
					return
				}
				id, err := registerBigUser(ctx, cmds, meta, a.ID, i)
				if err != nil {
					failed.Store(err)
					return
				}
				if i == 1 {
					first.Store(id)
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		tb.Fatal(err)
	}
	head, err := store.Head(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	built = bigLogApp{ID: a.ID, Key: a.Key, Secret: a.Secret, Users: users, Events: int(head.Commit), First: first.Load()}
	raw, _ := json.Marshal(built)
	if err := os.WriteFile(filepath.Join(dir, "bigapp.json"), raw, 0o600); err != nil {
		tb.Fatal(err)
	}
	return built
}

func bigRegister(appID, i int64) commands.Register {
	return commands.Register{
		AppID: appID, ChannelUserID: fmt.Sprintf("big-%d", i),
		User: commands.UserInput{
			Name: fmt.Sprintf("User %d", i), Phone: domain.Val(fmt.Sprintf("138%08d", i)),
			Email: domain.Val(fmt.Sprintf("u%d@example.com", i)), BirthDate: domain.Val("1980-01-02"), Gender: domain.Val("female"),
		},
		Groups:  []commands.GroupInput{{AppGroupID: 1, Name: "Home"}},
		Members: []commands.MemberInput{{AppUserID: fmt.Sprintf("m-%d", i), AppGroupID: 1, Name: "Kid", Relationship: "SON", Height: domain.Val[int64](120)}},
	}
}

func registerBigUser(ctx context.Context, cmds *commands.Users, meta commands.Meta, appID, i int64) (int64, error) {
	res, err := cmds.Register(ctx, bigRegister(appID, i), meta)
	if err != nil {
		return 0, fmt.Errorf("register %d: %w", i, err)
	}
	if _, err := cmds.UpdateProfile(ctx, appID, res.OpenUserID, commands.ProfilePatch{Nickname: domain.Val(fmt.Sprintf("nick-%d", i))}, meta); err != nil {
		return 0, fmt.Errorf("profile %d: %w", i, err)
	}
	return res.OpenUserID, nil
}

// TestBuildBigLog builds a log for the start-up measurement when
// PLATFORM_BIGLOG_DIR names a directory (PLATFORM_BIGLOG_USERS users,
// default 200,000: about 1M events); it is skipped otherwise.
func TestBuildBigLog(t *testing.T) {
	dir := os.Getenv("PLATFORM_BIGLOG_DIR")
	if dir == "" {
		t.Skip("PLATFORM_BIGLOG_DIR is unset: no big log to build")
	}
	users := 200000
	if v := os.Getenv("PLATFORM_BIGLOG_USERS"); v != "" {
		if _, err := fmt.Sscan(v, &users); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	built := buildBigLog(t, dir, users)
	t.Logf("log in %s: %d users, %d events, built in %s", dir, built.Users, built.Events, time.Since(began).Round(time.Millisecond))
}

package process

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/e2e/internal/proc"
	"github.com/healthtech/partner-open-platform/events/catalog"
	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
	keyspg "github.com/healthtech/partner-open-platform/internal/datakeys/postgres"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/secrets"
	"github.com/healthtech/partner-open-platform/privacy"
)

// envMillionDB names the database TestPostgresOpenWithAMillionEvents builds
// (once: later runs reuse it) and measures; unset, the test is skipped.
// envMillionUsers sets how many users it registers (default 170,000: six
// events each, about 1M events).
const (
	envMillionDB    = "PLATFORM_TEST_PG_MILLION_DB"
	envMillionUsers = "PLATFORM_TEST_PG_MILLION_USERS"
	envMillionRuns  = "PLATFORM_TEST_PG_MILLION_RUNS"
	envMillionLag   = "PLATFORM_TEST_PG_MILLION_LAG"
)

// millionBuild is what the built database remembers of how it was built
// (table million_build), so a later run can start nodes on it.
type millionBuild struct {
	MasterKey  string       `json:"master_key"`
	AdminToken string       `json:"admin_token"`
	Internal   string       `json:"internal_token"`
	Apps       []proc.Creds `json:"apps"`
	Users      int          `json:"users"`
	Events     int64        `json:"events"`
	Seconds    float64      `json:"build_seconds"`
}

// TestPostgresOpenWithAMillionEvents measures how long a node on the
// Postgres event store and Postgres read models takes from the exec of the
// platform binary to its first 200 on /readyz, on a database holding about
// 1M events written by the platform's own commands (registers with a family
// group and a member, profile patches and member upserts of many users of
// three apps, personal fields sealed per person). It is a measurement, not
// a test of timing: it runs only when PLATFORM_TEST_PG_MILLION_DB names a
// database on the test server, logs its figures and asserts only that the
// node became ready. It times, several times each (PLATFORM_TEST_PG_MILLION_RUNS,
// default 3): a start with the read models caught up, a start after the
// previous process was killed with SIGKILL, and a start after
// PLATFORM_TEST_PG_MILLION_LAG (default 2,000) events were appended while no
// node ran, so the read models lag by that many.
//
//	PLATFORM_TEST_PG_MILLION_DB=million PLATFORM_TEST_POSTGRES_URL=... \
//	  go test -run TestPostgresOpenWithAMillionEvents -v -timeout 2h ./cmd/platform
func TestPostgresOpenWithAMillionEvents(t *testing.T) {
	name := os.Getenv(envMillionDB)
	if name == "" {
		t.Skip("measurement: set " + envMillionDB + " to the name of a database to build (or reuse) and measure")
	}
	admin := os.Getenv("PLATFORM_TEST_POSTGRES_URL")
	if admin == "" {
		t.Skip("PLATFORM_TEST_POSTGRES_URL is unset")
	}
	db := millionDatabase(t, admin, name, false)
	built := millionLoad(t, db)
	if built == nil {
		// Not built, or a build that stopped half way: start afresh.
		db = millionDatabase(t, admin, name, true)
		built = buildMillion(t, db, proc.EnvInt(t, envMillionUsers, 170000))
	}
	t.Logf("database %s: %d users, %d events (built in %.0f s)", name, built.Users, built.Events, built.Seconds)
	bin := proc.Program(t)[0]
	env := millionEnv(db, built)

	// The first start after a build projects the whole log into the read
	// models; it is the catch-up, not an open, and is reported apart.
	first := startTimed(t, bin, env, 2*time.Hour)
	t.Logf("first start (read models project the whole log): /readyz 200 after %s", first.ready.Round(time.Millisecond))
	first.stop(t, false)

	runs := proc.EnvInt(t, envMillionRuns, 3)
	var fresh, killed, lagged []time.Duration
	lag := proc.EnvInt(t, envMillionLag, 2000)
	for range runs {
		n := startTimed(t, bin, env, 10*time.Minute)
		fresh = append(fresh, n.ready)
		n.stop(t, true) // kill -9 for the next start
		n = startTimed(t, bin, env, 10*time.Minute)
		killed = append(killed, n.ready)
		n.stop(t, false)
		appendMillionTail(t, db, built, lag)
		n = startTimed(t, bin, env, 10*time.Minute)
		lagged = append(lagged, n.ready)
		n.stop(t, false)
	}
	t.Logf("start, read models caught up: /readyz 200 after %s", durations(fresh))
	t.Logf("start after kill -9: /readyz 200 after %s", durations(killed))
	t.Logf("start with read models %d events behind: /readyz 200 after %s", lag, durations(lagged))
}

func durations(ds []time.Duration) string {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = d.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("median %s (runs: %s)", s[len(s)/2].Round(time.Millisecond), strings.Join(parts, ", "))
}

// millionDatabase creates the database name on the server if it is missing
// (dropping it first when fresh) and returns its URL; it is kept after the
// test, to be measured again.
func millionDatabase(t *testing.T, admin, name string, fresh bool) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if fresh {
		if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`); err != nil {
			t.Fatal(err)
		}
	}
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil {
			t.Fatal(err)
		}
	}
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func millionLoad(t *testing.T, db string) *millionBuild {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var raw []byte
	err = conn.QueryRow(ctx, `SELECT doc FROM million_build`).Scan(&raw)
	if err != nil {
		return nil // not built (or half built: build refuses a non-empty log)
	}
	var b millionBuild
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	return &b
}

func millionEnv(db string, b *millionBuild) []string {
	return proc.NodeEnv(db, b.MasterKey, b.AdminToken, b.Internal, "PLATFORM_RATE_LIMIT=-1")
}

// timedNode is one platform process started by startTimed.
type timedNode struct {
	node  *proc.Node
	ready time.Duration
}

// startTimed execs the binary and polls /readyz every 5 ms until it
// answers 200, returning the time since the exec.
func startTimed(t *testing.T, bin string, env []string, timeout time.Duration) *timedNode {
	t.Helper()
	n := proc.NewNode(t, 0, []string{bin}, env, t.TempDir())
	began := time.Now()
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	client := http.Client{Timeout: 5 * time.Second}
	for deadline := began.Add(timeout); ; time.Sleep(5 * time.Millisecond) {
		if !n.Running() {
			t.Fatalf("node exited before it was ready; log:\n%s", n.LogTail(8000))
		}
		if res, err := client.Get(n.Base + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return &timedNode{node: n, ready: time.Since(began)}
			}
		}
		if time.Now().After(deadline) {
			n.Kill()
			t.Fatalf("no /readyz 200 within %s; log:\n%s", timeout, n.LogTail(8000))
		}
	}
}

// stop ends the process: SIGKILL when kill9, else SIGTERM and a wait.
func (n *timedNode) stop(t *testing.T, kill9 bool) {
	t.Helper()
	if kill9 {
		n.node.Kill()
		return
	}
	n.node.Stop(time.Minute)
}

// millionWriter writes users through the platform's commands straight to
// the event store (no HTTP), as buildBigLog does for the embedded log.
type millionWriter struct {
	store *pgevents.Store
	keys  *datakeys.Keys
	users *commands.Users
	close func()
}

func openMillionWriter(t *testing.T, db string, b *millionBuild) *millionWriter {
	t.Helper()
	ctx := context.Background()
	store, err := pgevents.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	backend, err := keyspg.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	key, err := secrets.ParseKey(b.MasterKey)
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := secrets.New(key)
	if err != nil {
		t.Fatal(err)
	}
	ks := datakeys.New(backend, sealer)
	priv := privacy.New(store, ks)
	reg := catalog.Registry()
	loc, _ := time.LoadLocation(node.DefaultTimezone)
	ids := commands.NewAllocator(priv, reg, 500)
	ids.OnReserve(commands.KindUser, func(ctx context.Context, first, last int64) {
		subjects := make([]string, 0, last-first+1)
		for id := first; id <= last; id++ {
			subjects = append(subjects, commands.ErasureSubject(id))
		}
		_ = ks.Prepare(ctx, subjects)
	})
	names, err := node.OpenPseudonyms(ctx, ks)
	if err != nil {
		t.Fatal(err)
	}
	users := commands.NewUsers(priv, reg, ids, names, time.Now, loc).WithKeys(ks).WithKeyWarmer(ks)
	return &millionWriter{store: store, keys: ks, users: users, close: func() { store.Close(); backend.Close() }}
}

// write registers users from..to-1 with 32 concurrent writers: each
// register carries a group and a member; then a profile patch and a second
// member's upsert.
func (w *millionWriter) write(t *testing.T, b *millionBuild, prefix string, from, to int) {
	t.Helper()
	ctx := context.Background()
	var next atomic.Int64
	next.Store(int64(from) - 1)
	var failed atomic.Value
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i >= int64(to) || failed.Load() != nil {
					return
				}
				app := b.Apps[i%int64(len(b.Apps))]
				meta := commands.Meta{AppID: app.AppID, Actor: "app", RequestID: fmt.Sprintf("%s-%d", prefix, i)}
				if err := millionUser(ctx, w.users, meta, app.AppID, prefix, i); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
}

func millionUser(ctx context.Context, u *commands.Users, meta commands.Meta, appID int64, prefix string, i int64) error {
	res, err := u.Register(ctx, commands.Register{
		AppID: appID, ChannelUserID: fmt.Sprintf("%s-%d", prefix, i),
		User: commands.UserInput{
			Name: fmt.Sprintf("User %d", i), Phone: domain.Val(fmt.Sprintf("139%08d", i%100000000)),
			Email: domain.Val(fmt.Sprintf("%s%d@example.com", prefix, i)), BirthDate: domain.Val("1980-01-02"), Gender: domain.Val("female"),
		},
		Groups:  []commands.GroupInput{{AppGroupID: 1, Name: "Home"}},
		Members: []commands.MemberInput{{AppUserID: fmt.Sprintf("m-%d", i), AppGroupID: 1, Name: "Kid", Relationship: "SON", Height: domain.Val[int64](120)}},
	}, meta)
	if err != nil {
		return fmt.Errorf("register %d: %w", i, err)
	}
	if _, err := u.UpdateProfile(ctx, appID, res.OpenUserID, commands.ProfilePatch{Nickname: domain.Val(fmt.Sprintf("nick-%d", i))}, meta); err != nil {
		return fmt.Errorf("profile %d: %w", i, err)
	}
	if _, err := u.UpsertMember(ctx, appID, res.OpenUserID, commands.MemberInput{
		AppUserID: fmt.Sprintf("m2-%d", i), AppGroupID: 1, Name: "Grandma", Relationship: "GRANDMOTHER", Weight: domain.Val[int64](5500),
	}, meta); err != nil {
		return fmt.Errorf("member %d: %w", i, err)
	}
	return nil
}

// buildMillion writes the apps through a node's HTTP API and the users
// through the commands, then records the build in million_build.
func buildMillion(t *testing.T, db string, users int) *millionBuild {
	t.Helper()
	ctx := context.Background()
	began := time.Now()
	b := &millionBuild{MasterKey: proc.RandomHex(t, 32), AdminToken: "adm_million_" + proc.RandomHex(t, 12), Internal: "int_million_" + proc.RandomHex(t, 12), Users: users}
	n := startTimed(t, proc.Program(t)[0], millionEnv(db, b), time.Minute)
	c := &proc.Cluster{T: t, DB: db, Nodes: []*proc.Node{n.node}, AdminToken: b.AdminToken,
		Client: &proc.Client{Nodes: []*proc.Node{n.node}, HTTP: &http.Client{Timeout: 15 * time.Second}}}
	for i := range 3 {
		b.Apps = append(b.Apps, c.CreatePartner(fmt.Sprintf("million %d", i)).Creds)
	}
	n.stop(t, false)

	w := openMillionWriter(t, db, b)
	defer w.close()
	for from := 0; from < users; from += 10000 {
		w.write(t, b, "mu", from, min(from+10000, users))
		head, err := w.store.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("built %d users, %d events, %s", min(from+10000, users), head.Commit, time.Since(began).Round(time.Second))
	}
	head, err := w.store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.Events = int64(head.Commit)
	b.Seconds = time.Since(began).Seconds()
	raw, _ := json.Marshal(b)
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS million_build (doc jsonb NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO million_build (doc) VALUES ($1)`, raw); err != nil {
		t.Fatal(err)
	}
	return b
}

// appendMillionTail appends about n events (new users) while no node runs,
// so the next start finds its read models n events behind.
func appendMillionTail(t *testing.T, db string, b *millionBuild, n int) {
	t.Helper()
	w := openMillionWriter(t, db, b)
	defer w.close()
	prefix := "tail" + proc.RandomHex(t, 4)
	w.write(t, b, prefix, 0, max(n/6, 1))
}

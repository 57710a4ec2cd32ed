package cluster_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/lease"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/jackc/pgx/v5"
)

// owners returns, per read model, the nodes that project it now.
func owners(nodes ...*harness.Platform) map[projections.ReadModel][]string {
	out := map[projections.ReadModel][]string{}
	for _, p := range nodes {
		for _, f := range projections.ReadModels {
			if p.Node.ReadModelRunners[f].Owning() {
				out[f] = append(out[f], p.Node.NodeID)
			}
		}
	}
	return out
}

// waitOwned waits (bounded) until every read model is projected by one of nodes
// and every node names that owner, and returns the owners.
func waitOwned(t *testing.T, limit time.Duration, nodes ...*harness.Platform) map[projections.ReadModel]string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		got := map[projections.ReadModel]string{}
		agreed := true
		for f, ids := range owners(nodes...) {
			if len(ids) > 1 {
				t.Fatalf("family %s has %d owners: %v", f, len(ids), ids)
			}
			got[f] = ids[0]
		}
		for _, p := range nodes {
			for _, f := range projections.ReadModels {
				if s := p.Node.ReadModelRunners[f].Stats(); got[f] == "" || s.Owner != got[f] || !s.Ready {
					agreed = false
				}
			}
		}
		if agreed && len(got) == len(projections.ReadModels) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("families not owned and agreed on within %s: owners %v", limit, owners(nodes...))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClusterOneOwnerPerReadModel: three nodes share one Postgres; each read model
// is projected by exactly one of them, every node's /readyz and projection
// list name the same owner, and no read model ever has two owners while the
// nodes run.
func TestClusterOneOwnerPerReadModel(t *testing.T) {
	t.Parallel()
	db := harness.NodeDB(t)
	// A lease must not lapse while watched: a 2 s lease did when a starved
	// node renewed late on a loaded machine (node-c took "orders" from
	// node-a: a legal takeover, not a second owner). Nothing here waits for
	// a takeover, so the lease is long.
	const ttl = 30 * time.Second
	nodes := []*harness.Platform{
		harness.Start(t, harness.ClusterConfig(t, db, "node-a", ttl)),
		harness.Start(t, harness.ClusterConfig(t, db, "node-b", ttl)),
		harness.Start(t, harness.ClusterConfig(t, db, "node-c", ttl)),
	}
	own := waitOwned(t, time.Minute, nodes...)
	t.Logf("owners: %v", own)
	// A node holding two leases more than another hands one over after half
	// a ttl (lease.Balancer), so an owner may change while watched; two
	// owners at once never may.
	for i := 0; i < 50; i++ {
		for f, ids := range owners(nodes...) {
			if len(ids) > 1 {
				t.Fatalf("family %s has %d owners at once: %v", f, len(ids), ids)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Every node names the owner: a disagreement counts only when the
	// owners did not change while the names were read.
	for attempt := 1; ; attempt++ {
		own = waitOwned(t, time.Minute, nodes...)
		wrong := ownerNames(t, own, nodes...)
		if len(wrong) == 0 {
			return
		}
		if !sameOwners(own, nodes...) && attempt < 10 {
			t.Logf("owners moved while named (%v); reading again", wrong)
			continue
		}
		for _, w := range wrong {
			t.Error(w)
		}
		return
	}
}

// sameOwners says whether each read model still has the one owner own names.
func sameOwners(own map[projections.ReadModel]string, nodes ...*harness.Platform) bool {
	now := owners(nodes...)
	for _, f := range projections.ReadModels {
		if len(now[f]) != 1 || now[f][0] != own[f] {
			return false
		}
	}
	return true
}

// ownerNames lists where a node's /readyz or projection list names another
// owner than own, or an owner for the apps directory (every node keeps it).
func ownerNames(t *testing.T, own map[projections.ReadModel]string, nodes ...*harness.Platform) []string {
	t.Helper()
	var wrong []string
	for _, p := range nodes {
		var ready map[string]struct {
			Owner string `json:"owner"`
		}
		res := p.Admin("GET", "/readyz", nil)
		if res.Status != http.StatusOK {
			t.Fatalf("%s /readyz: %d %s", p.Node.NodeID, res.Status, res.Raw)
		}
		res.Data(t, &ready)
		var list struct {
			Projections []struct {
				Name  string `json:"name"`
				Owner string `json:"owner"`
			} `json:"projections"`
		}
		p.Admin("GET", "/admin/v1/projections", nil).Data(t, &list)
		listed := map[string]string{}
		for _, s := range list.Projections {
			listed[s.Name] = s.Owner
		}
		for _, f := range projections.ReadModels {
			if ready[string(f)].Owner != own[f] || listed[string(f)] != own[f] {
				wrong = append(wrong, fmt.Sprintf("%s shows %s owned by %q (/readyz) and %q (list), want %q", p.Node.NodeID, f, ready[string(f)].Owner, listed[string(f)], own[f]))
			}
		}
		if o := ready["apps"].Owner; o != "" {
			wrong = append(wrong, fmt.Sprintf("%s names an owner (%q) for the apps directory, which every node keeps itself", p.Node.NodeID, o))
		}
	}
	return wrong
}

// TestClusterReadYourWritesAcrossNodes: a partner writes through one node
// and reads through another at once, with no extra header, many times in
// both directions, whichever node projects the read model; every read sees
// its write.
func TestClusterReadYourWritesAcrossNodes(t *testing.T) {
	t.Parallel()
	db := harness.NodeDB(t)
	pa := harness.Start(t, harness.ClusterConfig(t, db, "node-a", 2*time.Second))
	pb := harness.Start(t, harness.ClusterConfig(t, db, "node-b", 2*time.Second))
	waitOwned(t, time.Minute, pa, pb)
	a := pa.CreateApp("partner")
	if err := pb.Node.WaitCaughtUp(t.Context()); err != nil { // the app directory: another engineer's part
		t.Fatal(err)
	}
	via := []*harness.App{a.On(pa), a.On(pb)}
	for i := range 30 {
		w, r := via[i%2], via[(i+1)%2]
		var reg harness.RegisterData
		w.Expect("POST", "/open/v1/channel/users", harness.RegisterBody(fmt.Sprintf("ryw-%d", i)), http.StatusCreated, "0").Data(t, &reg)
		user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
		if got := r.Snapshot(user); got.User.OpenUserID != reg.OpenUserID || len(got.FamilyMembers) != 2 {
			t.Fatalf("iteration %d: registered through %s, read through %s: %+v", i, w.P.Node.NodeID, r.P.Node.NodeID, harness.Deref(got))
		}
		w.Expect("DELETE", fmt.Sprintf("%s/family-members/%d", user, reg.FamilyMembers[1].MemberID), nil, http.StatusOK, "0")
		if got := r.Snapshot(user); len(got.FamilyMembers) != 1 {
			t.Fatalf("iteration %d: member deleted through %s, read through %s still has %d members", i, w.P.Node.NodeID, r.P.Node.NodeID, len(got.FamilyMembers))
		}
	}
}

// cutProxy forwards loopback TCP to Postgres until cut, when it drops every
// connection and refuses new ones: a node behind it is cut off from the
// database as by a crash or a partition, without closing anything itself.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	cutAt  bool
}

func newCutProxy(t *testing.T, db string) (*cutProxy, string) {
	t.Helper()
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: u.Host}
	go p.serve()
	t.Cleanup(p.cut)
	u.Host = ln.Addr().String()
	return p, u.String()
}

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.cutAt {
			p.mu.Unlock()
			c.Close()
			up.Close()
			return
		}
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); up.Close() }()
		go func() { _, _ = io.Copy(c, up); c.Close() }()
	}
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cutAt {
		return
	}
	p.cutAt = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
}

// TestClusterTakeoverWithinTheTTL: the node that projects every read model is
// cut off from the database (as if killed: it releases nothing); the
// other node takes every read model over once the leases lapse, and serves
// the writes made through it. A node closed cleanly hands its read models
// over at once. The measured takeover times are logged.
func TestClusterTakeoverWithinTheTTL(t *testing.T) {
	t.Parallel()
	const ttl = 2 * time.Second
	db := harness.NodeDB(t)
	proxy, viaProxy := newCutProxy(t, db)
	cfgA := harness.ClusterConfig(t, viaProxy, "node-a", ttl)
	pa := harness.Start(t, cfgA)
	waitOwned(t, time.Minute, pa)
	a := pa.CreateApp("partner")
	pb := harness.Start(t, harness.ClusterConfig(t, db, "node-b", ttl))
	waitOwned(t, time.Minute, pa, pb)
	// node-a started first, so it owns the read models, unless a renewal of
	// its came later than the TTL on a loaded machine and node-b took that
	// read model over already: the takeover measured below is of the read models
	// node-a still owns, so at least one must be.
	ofA := 0
	for f, ids := range owners(pa, pb) {
		if len(ids) != 1 {
			t.Fatalf("family %s owned by %v before the cut, want one owner", f, ids)
		}
		if ids[0] == "node-a" {
			ofA++
		}
	}
	if ofA == 0 {
		t.Fatal("node-b owns every family before the cut, want node-a (it started first) to own some")
	}
	if err := pb.Node.WaitCaughtUp(t.Context()); err != nil {
		t.Fatal(err)
	}

	cut := time.Now()
	proxy.cut()
	taken := map[projections.ReadModel]time.Duration{}
	for len(taken) < len(projections.ReadModels) {
		if time.Since(cut) > 10*ttl {
			t.Fatalf("after %s only %v were taken over (TTL %s)", time.Since(cut), taken, ttl)
		}
		for _, f := range projections.ReadModels {
			if _, ok := taken[f]; !ok && pb.Node.ReadModelRunners[f].Owning() {
				taken[f] = time.Since(cut)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	var last time.Duration
	for _, d := range taken {
		last = max(last, d)
	}
	t.Logf("takeover after the owner was cut off: every family in %s (TTL %s, renewals every %s): %v", last.Round(time.Millisecond), ttl, ttl/3, taken)
	waitOwned(t, time.Minute, pb)

	b := a.On(pb)
	var reg harness.RegisterData
	b.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("after-takeover"), http.StatusCreated, "0").Data(t, &reg)
	if got := b.Snapshot(fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)); got.User.OpenUserID != reg.OpenUserID {
		t.Fatalf("read after the takeover: %+v", harness.Deref(got))
	}
	// The cut-off node found out it lost its read models.
	deadline := time.Now().Add(10 * ttl)
	for len(owners(pa)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the cut-off node still believes it owns %v", owners(pa))
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = pa.Node.Close() // its database is gone: errors expected
	pa.Node = nil

	// A clean close releases the leases: a new node takes over without
	// waiting for them to lapse.
	pc := harness.Start(t, harness.ClusterConfig(t, db, "node-c", ttl))
	waitOwned(t, time.Minute, pb, pc)
	closed := time.Now()
	pb.Stop()
	waitOwned(t, time.Minute, pc)
	t.Logf("takeover after the owner closed cleanly: %s", time.Since(closed).Round(time.Millisecond))
	c := a.On(pc)
	if got := c.Snapshot(fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)); got.User.OpenUserID != reg.OpenUserID {
		t.Fatalf("read on the last node: %+v", harness.Deref(got))
	}
}

// TestClusterRebuildOnANonOwner: an operator asks a node that does not
// project the users read model to rebuild it; the owner rebuilds it once,
// and reads through either node give the same answers as before.
func TestClusterRebuildOnANonOwner(t *testing.T) {
	t.Parallel()
	db := harness.NodeDB(t)
	pa := harness.Start(t, harness.ClusterConfig(t, db, "node-a", 2*time.Second))
	waitOwned(t, time.Minute, pa)
	pb := harness.Start(t, harness.ClusterConfig(t, db, "node-b", 2*time.Second))
	waitOwned(t, time.Minute, pa, pb)
	// The leases spread over the two nodes; once spread, they stay.
	waitSpread(t, time.Minute, pa, pb)
	own := waitOwned(t, time.Minute, pa, pb)
	owner := own[projections.ReadModelUsers]
	if owner == pb.Node.NodeID { // pb is the one asked that does not project users
		pa, pb = pb, pa
	}
	a := pa.CreateApp("partner")
	if err := pb.Node.WaitCaughtUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i := range 20 {
		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody(fmt.Sprintf("rb-%d", i)), http.StatusCreated, "0").Data(t, &reg)
		paths = append(paths, fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID))
	}
	want := map[string]string{}
	for _, path := range paths {
		want[path] = harness.Deref(a.Snapshot(path))
	}

	// Two operators ask at once, through the node that does not own it.
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if res := pb.Admin("POST", "/admin/v1/projections/users/rebuild", nil); res.Status != http.StatusAccepted {
				t.Errorf("rebuild through the non-owner: %d %s", res.Status, res.Raw)
			}
		})
	}
	wg.Wait()
	for _, via := range []*harness.App{a.On(pb), a.On(pa)} {
		for _, path := range paths {
			if got := harness.Deref(via.Snapshot(path)); got != want[path] {
				t.Fatalf("after the rebuild, through %s: %s\nwant %s", via.P.Node.NodeID, got, want[path])
			}
		}
	}
	var gen, requested int64
	if err := pgxQueryRow(t, db, `SELECT generation, requested FROM family_generations WHERE projection = 'users'`, &gen, &requested); err != nil {
		t.Fatal(err)
	}
	if gen < 1 || gen > 2 || requested > gen {
		t.Fatalf("users generation %d, requested %d: want one rebuild (two if the second request came after the first began), none pending", gen, requested)
	}
	for _, p := range []*harness.Platform{pa, pb} {
		if s := p.Node.ReadModelRunners[projections.ReadModelUsers].Stats(); !s.Ready || s.Owner != owner || s.Rebuilding {
			t.Fatalf("%s's users stats after the rebuild: %+v", p.Node.NodeID, s)
		}
	}
	if own := owners(pa, pb)[projections.ReadModelUsers]; len(own) != 1 || own[0] != owner {
		t.Fatalf("users owned by %v after the rebuild", own)
	}
}

func pgxQueryRow(t *testing.T, db, sql string, into ...any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.QueryRow(ctx, sql).Scan(into...)
}

// TestClusterVerifyThenRateAcrossNodes: a provider verifies a card through
// the node that projects every read model and the card's issuer rates the
// fulfillment at once through the other node, which only follows: the
// rating finds the fulfillment each time (its lookup waits for the log's
// head, not for the last write of the node it arrived at).
func TestClusterVerifyThenRateAcrossNodes(t *testing.T) {
	t.Parallel()
	db := harness.NodeDB(t)
	cfgA := harness.ClusterConfig(t, db, "node-a", 2*time.Second)
	cfgA.VerifyCooldown = -1
	pa := harness.Start(t, cfgA)
	waitOwned(t, time.Minute, pa)
	cfgB := harness.ClusterConfig(t, db, "node-b", 2*time.Second)
	cfgB.VerifyCooldown = -1
	pb := harness.Start(t, cfgB)
	waitOwned(t, time.Minute, pa, pb)
	station, partner, item := harness.BenefitSetup(t, pa)
	card := partner.Issue(item, 20, time.Now().Add(48*time.Hour).Format(time.RFC3339))
	if err := pb.Node.WaitCaughtUp(t.Context()); err != nil { // the app directory
		t.Fatal(err)
	}
	rater := partner.On(pb)
	for i := range 15 {
		var v struct {
			RecordID int64 `json:"fulfillment_record_id"`
		}
		station.Expect("POST", "/open/v1/benefit-cards/verify-use", map[string]any{"card_number": card, "benefit_item_id": item, "points_code": "P-1"}, 200, "0").Data(t, &v)
		if res := rater.Do("POST", fmt.Sprintf("/open/v1/benefit-cards/fulfillments/%d/rating", v.RecordID), map[string]any{"rating": 1 + i%5}); res.Status != http.StatusOK {
			t.Fatalf("iteration %d: rating through the other node: %d %s", i, res.Status, res.Raw)
		}
	}
}

// waitSpread waits until no node holds two leases more than another, when
// hand-overs stop.
func waitSpread(t *testing.T, limit time.Duration, ps ...*harness.Platform) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		lo, hi := -1, -1
		for _, p := range ps {
			l, err := p.Node.Leases.(lease.Balancer).Load(t.Context(), p.Node.NodeID)
			if err != nil {
				t.Fatal(err)
			}
			if lo < 0 || l.Held < lo {
				lo = l.Held
			}
			hi = max(hi, l.Held)
		}
		if hi-lo <= 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("leases not spread after %v: %d to %d per node", limit, lo, hi)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

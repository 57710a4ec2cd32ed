package feed_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/relay/feed"
	"github.com/healthtech/partner-open-platform/relay/feed/feedtest"
)

func transformer(t *testing.T, key string) *feed.Transformer {
	t.Helper()
	tr, err := feed.New([]byte(strings.Repeat(key, 32)[:32]), catalog.Registry())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// compileSchemas compiles the committed schema file of every published type.
func compileSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	out := map[string]*jsonschema.Schema{}
	for _, typ := range feed.PublishedTypes() {
		b, ok := feed.Schema(typ)
		if !ok {
			t.Fatalf("no schema file for published type %s", typ)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		url := feed.SchemaID + typ + ".json"
		if err := c.AddResource(url, doc); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if out[typ], err = c.Compile(url); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
	}
	return out
}

// TestEveryPublishedMessageMatchesItsSchema runs a log holding every catalog
// type through the feed and validates each message against its committed schema.
func TestEveryPublishedMessageMatchesItsSchema(t *testing.T) {
	tr := transformer(t, "k")
	schemas := compileSchemas(t)
	seen := map[string]int{}
	for _, ev := range feedtest.Events(1) {
		m, ok, err := tr.Transform(ev)
		if err != nil {
			t.Fatalf("%s: %v", ev.Type, err)
		}
		if !ok {
			continue
		}
		seen[ev.Type]++
		var header struct{ Schema string }
		if err := json.Unmarshal(m.Value, &header); err != nil {
			t.Fatalf("%s: %s: %v", ev.Type, m.Value, err)
		}
		if header.Schema != ev.Type+"/v1" || m.Schema != header.Schema || m.Type != ev.Type {
			t.Fatalf("%s: schema %q (message %q, type %q)", ev.Type, header.Schema, m.Schema, m.Type)
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(m.Value))
		if err != nil {
			t.Fatal(err)
		}
		if err := schemas[ev.Type].Validate(v); err != nil {
			t.Errorf("%s message %s\ndoes not match its schema: %v", ev.Type, m.Value, err)
		}
	}
	for _, typ := range feed.PublishedTypes() {
		if seen[typ] == 0 {
			t.Errorf("published type %s has no sample in feedtest, so its schema is untested", typ)
		}
	}
}

// TestSchemasRefuseALeakedField proves the schemas are closed: a personal
// field added to data would fail validation, not pass silently.
func TestSchemasRefuseALeakedField(t *testing.T) {
	schemas := compileSchemas(t)
	tr := transformer(t, "k")
	for _, ev := range feedtest.Events(1) {
		if ev.Type != "user.registered" {
			continue
		}
		m, _, err := tr.Transform(ev)
		if err != nil {
			t.Fatal(err)
		}
		leaked := bytes.Replace(m.Value, []byte(`"data":{`), []byte(`"data":{"phone":"13800138000",`), 1)
		v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(leaked))
		if err := schemas[ev.Type].Validate(v); err == nil {
			t.Fatalf("schema accepted %s", leaked)
		}
		return
	}
	t.Fatal("no user.registered sample")
}

// TestNoPersonalValueReachesTheFeed searches every analytics message for the
// recognisable personal values written into the events.
func TestNoPersonalValueReachesTheFeed(t *testing.T) {
	tr := transformer(t, "k")
	forbidden := append([]string{feedtest.CardNumber, "user-4242", `"open_user_id"`, `"channel_user_id"`, `"member_id"`,
		`"actor"`, "req-1"}, feedtest.Personal...)
	n := 0
	for _, ev := range feedtest.Events(1) {
		m, ok, err := tr.Transform(ev)
		if err != nil || !ok {
			continue
		}
		n++
		msg := string(m.Key) + "\n" + string(m.Value)
		for _, p := range forbidden {
			if strings.Contains(msg, p) {
				t.Errorf("%s message carries %q:\n%s", ev.Type, p, msg)
			}
		}
	}
	if n < len(feed.PublishedTypes()) {
		t.Fatalf("only %d messages", n)
	}
}

// TestInternalAndUnknownTypesAreNotPublished checks the allow-list: plumbing
// and types added later produce no message.
func TestInternalAndUnknownTypesAreNotPublished(t *testing.T) {
	tr := transformer(t, "k")
	internal := []string{"ids.block_reserved", "app.secret_rotated", "app.webhook_configured", "app.webhook_secret_issued",
		"app.webhook_secret_activated", "channel_user.bound", "report.key_claimed", "order.key_claimed", "uploader.registered",
		"oauth.token.issued", "oauth.token.revoked", "plugin.nonce.claimed", "webhook.delivery.created", "webhook.delivery.attempted",
		"webhook.delivery.resend_requested", "idempotency.claimed", "idempotency.completed", "idempotency.released",
		"benefit_card.batch_planned", "benefit_card.batch_renumbered", "benefit_card.batch_completed",
		"app.webhook_endpoint_added", "app.webhook_endpoint_updated", "app.webhook_endpoint_disabled", "app.webhook_endpoint_enabled",
		"app.webhook_endpoint_removed", "app.webhook_endpoint_secret_issued", "app.webhook_endpoint_secret_activated", "app.webhook_test_requested"}
	isInternal := map[string]bool{}
	for _, typ := range internal {
		isInternal[typ] = true
		if feed.Published(typ) {
			t.Errorf("internal type %s is published", typ)
		}
	}
	for _, ev := range feedtest.Events(1) {
		_, ok, err := tr.Transform(ev)
		if err != nil {
			t.Fatalf("%s: %v", ev.Type, err)
		}
		if ok == isInternal[ev.Type] {
			t.Errorf("%s: published=%v", ev.Type, ok)
		}
	}
	future := events.Recorded{ID: "x", Stream: "user-1", Type: "user.erased", Data: []byte(`{"open_user_id":1,"name":"PII"}`)}
	if _, ok, err := tr.Transform(future); ok || err != nil {
		t.Fatalf("a type without a table entry was published (ok=%v err=%v)", ok, err)
	}
}

// TestPseudonymsAreStableKeyedAndJoinable checks that one person gets one
// pseudonym across events and in the stream key, and another key gives others.
func TestPseudonymsAreStableKeyedAndJoinable(t *testing.T) {
	a, b := transformer(t, "a"), transformer(t, "b")
	userRef := a.Pseudonym(feed.NSUser, "4242")
	refs := map[string]bool{}
	for _, ev := range feedtest.Events(1) {
		m, ok, err := a.Transform(ev)
		if err != nil || !ok {
			continue
		}
		var v struct {
			Stream       string `json:"stream"`
			PseudonymKey string `json:"pseudonym_key"`
			Data         struct {
				UserRef   *string `json:"user_ref"`
				MemberRef *string `json:"member_ref"`
				CardRef   *string `json:"card_ref"`
			} `json:"data"`
		}
		if err := json.Unmarshal(m.Value, &v); err != nil {
			t.Fatal(err)
		}
		if v.PseudonymKey != a.KeyID() || string(m.Key) != v.Stream {
			t.Fatalf("%s: key id %q, kafka key %q, stream %q", ev.Type, v.PseudonymKey, m.Key, v.Stream)
		}
		if v.Data.UserRef != nil {
			refs[*v.Data.UserRef] = true
			if *v.Data.UserRef != userRef {
				t.Errorf("%s: user_ref %s, want %s", ev.Type, *v.Data.UserRef, userRef)
			}
		}
		if strings.HasPrefix(ev.Stream, "user-") && v.Stream != "user-"+userRef {
			t.Errorf("%s: stream %s, want user-%s", ev.Type, v.Stream, userRef)
		}
		if v.Data.MemberRef != nil && *v.Data.MemberRef != a.Pseudonym(feed.NSMember, "9191") {
			t.Errorf("%s: member_ref %s", ev.Type, *v.Data.MemberRef)
		}
		if v.Data.CardRef != nil && (*v.Data.CardRef != a.Pseudonym(feed.NSCard, feedtest.CardNumber) || v.Stream != "card-"+*v.Data.CardRef) {
			t.Errorf("%s: card_ref %s, stream %s", ev.Type, *v.Data.CardRef, v.Stream)
		}
	}
	if len(refs) != 1 {
		t.Fatalf("user pseudonyms %v, want one", refs)
	}
	if a.Pseudonym(feed.NSUser, "4242") == b.Pseudonym(feed.NSUser, "4242") || a.KeyID() == b.KeyID() {
		t.Fatal("two keys give the same pseudonym or key id")
	}
	if a.Pseudonym(feed.NSUser, "9191") == a.Pseudonym(feed.NSMember, "9191") {
		t.Fatal("a user and a member with the same number share a pseudonym")
	}
	if _, err := feed.New(make([]byte, 16), catalog.Registry()); err == nil {
		t.Fatal("a 16-byte key was accepted")
	}
}

// TestSchemaOneAppCreatedIsUpcastBeforePublishing: history written before
// scopes existed is published as it reads today (every scope granted).
func TestSchemaOneAppCreatedIsUpcastBeforePublishing(t *testing.T) {
	tr := transformer(t, "k")
	ev := events.Recorded{ID: "e1", Stream: "app-3", Type: "app.created",
		Data: []byte(`{"app_id":3,"name":"Old","app_key":"ak","sealed_app_secret":"v1:x","sealed_webhook_secret":"v1:y","environment":"production"}`),
		Meta: []byte(`{"schema":1,"app_id":3,"occurred_at":"2025-01-01T00:00:00Z"}`)}
	m, ok, err := tr.Transform(ev)
	if err != nil || !ok {
		t.Fatalf("ok=%v err=%v", ok, err)
	}
	var v struct {
		OccurredAt string `json:"occurred_at"`
		Data       struct {
			Scopes []string `json:"scopes"`
		} `json:"data"`
	}
	if err := json.Unmarshal(m.Value, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Data.Scopes) == 0 || v.OccurredAt != "2025-01-01T00:00:00Z" {
		t.Fatalf("message %s", m.Value)
	}
	if strings.Contains(string(m.Value), "sealed") || strings.Contains(string(m.Value), `"ak"`) {
		t.Fatalf("credentials in %s", m.Value)
	}
}

// BenchmarkTransform measures the feed's cost per event (decode, upcast,
// select, pseudonymise, encode) over the sample log's mix of types.
func BenchmarkTransform(b *testing.B) {
	tr, err := feed.New(bytes.Repeat([]byte{1}, 32), catalog.Registry())
	if err != nil {
		b.Fatal(err)
	}
	evs := feedtest.Events(1)
	n := 0
	for b.Loop() {
		for _, ev := range evs {
			if _, _, err := tr.Transform(ev); err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}

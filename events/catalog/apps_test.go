package catalog_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Apps created before least privilege (schema 1) without scopes could use
// every scope; replay keeps that grant. From schema 2 on, scopes are
// written out and read as they are.
func TestAppScopesOfHistoryKeepTheirMeaning(t *testing.T) {
	reg := catalog.Registry()
	cases := []struct {
		typ, meta, data string
		want            []string
	}{
		{"app.created", `{"schema":1}`, `{"app_id":1,"name":"old","environment":"sandbox"}`, domain.Scopes},
		{"app.created", `{"schema":1}`, `{"app_id":1,"name":"old","environment":"sandbox","scopes":["orders"]}`, []string{"orders"}},
		{"app.scopes_declared", `{"schema":1}`, `{"app_id":1,"scopes":[]}`, domain.Scopes},
		{"app.scopes_declared", `{"schema":1}`, `{"app_id":1,"scopes":null}`, domain.Scopes},
		{"app.scopes_declared", `{"schema":2}`, `{"app_id":1,"scopes":["webhooks"]}`, []string{"webhooks"}},
		{"app.scopes_declared", `{"schema":2}`, `{"app_id":1,"scopes":[]}`, []string{}},
	}
	for _, c := range cases {
		env, err := reg.Decode(events.Recorded{ID: "e", Type: c.typ, Data: []byte(c.data), Meta: []byte(c.meta)})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		switch p := env.Payload.(type) {
		case *catalog.AppCreated:
			got = p.Scopes
		case *catalog.AppScopesDeclared:
			got = p.Scopes
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %s: scopes %v, want %v", c.meta, c.data, got, c.want)
		}
	}
	// New events are written at schema 2.
	ev, err := reg.Encode(catalog.AppScopesDeclared{AppID: 1, Scopes: []string{"orders"}}, events.Metadata{})
	var meta events.Metadata
	if err != nil || json.Unmarshal(ev.Meta, &meta) != nil || meta.Schema != 2 {
		t.Fatalf("encoded meta %s, %v", ev.Meta, err)
	}
}

package webhooks_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/eventtypes"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// catalogSchemas compiles the schema of every catalogued type's current
// version, as a partner would from GET /open/v1/event-types/{type}, with
// formats asserted.
func catalogSchemas(t *testing.T, p *harness.Platform) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	out := map[string]*jsonschema.Schema{}
	var list struct {
		EventTypes []struct {
			Name    string `json:"name"`
			Current int    `json:"current_version"`
		} `json:"event_types"`
	}
	req, _ := http.NewRequest("GET", p.Srv.URL+"/open/v1/event-types", nil)
	res := p.Send(req)
	if res.Status != http.StatusOK {
		t.Fatalf("list: %d %s", res.Status, res.Raw)
	}
	res.Data(t, &list)
	for _, e := range list.EventTypes {
		req, _ := http.NewRequest("GET", p.Srv.URL+"/open/v1/event-types/"+e.Name, nil)
		res := p.Send(req)
		var typ eventtypes.Type
		if res.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", e.Name, res.Status, res.Raw)
		}
		res.Data(t, &typ)
		v := typ.Versions[e.Current-1]
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(v.Schema))
		if err != nil {
			t.Fatal(err)
		}
		url := eventtypes.SchemaID + eventtypes.SchemaFile(e.Name, v.Version)
		if err := c.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
		if out[e.Name], err = c.Compile(url); err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
	}
	if len(out) != len(eventtypes.All()) {
		t.Fatalf("the node serves %d types, the catalog has %d", len(out), len(eventtypes.All()))
	}
	return out
}

// TestEveryCataloguedEventAsTheDispatcherSendsIt drives a node through the
// partner, operator and sandbox actions that make every catalogued event
// type, receives the webhooks the dispatcher really sends, and validates
// each body against the catalog's schema for its version; a webhook whose
// type the catalog does not list fails the test.
func TestEveryCataloguedEventAsTheDispatcherSendsIt(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		cfg.WebhookAllowLoopback = true
		p := harness.Start(t, cfg)
		schemas := catalogSchemas(t, p)
		a := p.CreateApp("catalog")
		rcv := harness.NewReceiver(t)
		rcv.Secret = a.WebhookSecret
		p.ConfigureWebhook(a, rcv.Srv.URL+"/hooks") // every event

		// Channel users: register (group and members created), profile,
		// member upsert of an existing member, member and group deletion.
		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-cat"), http.StatusCreated, "0").Data(t, &reg)
		user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
		a.Expect("PATCH", user, map[string]any{"nickname": "n"}, http.StatusOK, "0")
		a.Expect("POST", user+"/family-members", map[string]any{"app_user_id": "wife", "app_group_id": 10, "name": "韩梅梅", "relationship": "SPOUSE", "weight": 5500}, http.StatusOK, "0")
		a.Expect("DELETE", fmt.Sprintf("%s/family-members/%d", user, reg.FamilyMembers[1].MemberID), nil, http.StatusOK, "0")
		a.Expect("DELETE", fmt.Sprintf("%s/family-groups/%d", user, reg.FamilyGroups[0].FamilyGroupID), nil, http.StatusOK, "0")

		// Health reports: an upload, then a change.
		up := p.Uploader("stations")
		res := p.Ingest(up, "POST", "/admin/v1/health-reports", harness.ReportBody(reg.OpenUserID, ""))
		if res.Status != http.StatusCreated {
			t.Fatalf("ingest: %d %s", res.Status, res.Raw)
		}
		var report struct {
			ID int64 `json:"id"`
		}
		res.Data(t, &report)
		if res := p.Ingest(up, "PATCH", fmt.Sprintf("/admin/v1/health-reports/%d", report.ID), []byte(`{"interpretation_result":"elevated"}`)); res.Status != http.StatusOK {
			t.Fatalf("report change: %d %s", res.Status, res.Raw)
		}

		// Plugin: a sandbox mock measurement.
		body := harness.Encode(t, map[string]any{"appKey": a.Key, "thirdUserId": "t1", "deviceKey": "HOME_MULTI_BIO_MONITOR", "measureMode": "BP"})
		if res := p.Send(a.RequestH("POST", "/sandbox/mock/measure", body, harness.FreshNonce(), time.Now())); res.Status != http.StatusOK {
			t.Fatalf("mock: %d %s", res.Status, res.Raw)
		}

		// Orders: a shipment through the sandbox route.
		p.AdminOK("POST", "/admin/v1/goods", map[string]any{"goods_code": "BP-100", "goods_name": "Blood pressure monitor"}, 201)
		var order struct {
			OrderCode string `json:"order_code"`
		}
		a.Expect("POST", "/open/v1/order/create", harness.OrderBody("T-cat", "BP-100"), 201, "0").Data(t, &order)
		a.Expect("POST", "/open/v1/order/shipped-callback-test", map[string]any{"order_code": order.OrderCode}, 200, "0")

		// The test event, sent to the default endpoint by API.
		a.Expect("POST", fmt.Sprintf("/open/v1/webhooks/endpoints/%d/test", domain.DefaultEndpointID), nil, http.StatusAccepted, "0")

		// Wait (bounded) until every catalogued type has arrived.
		var want []string
		for _, typ := range eventtypes.All() {
			want = append(want, typ.Name)
		}
		seen := map[string]int{}
		var got []harness.Webhook
		for n := 1; ; n++ {
			got = rcv.WaitFor(n)
			seen = map[string]int{}
			for _, w := range got {
				seen[w.Event]++
			}
			missing := slices.DeleteFunc(slices.Clone(want), func(name string) bool { return seen[name] > 0 })
			if len(missing) == 0 {
				break
			}
		}
		// Give webhooks still on their way a moment, so a later webhook of
		// an uncatalogued type is checked too.
		time.Sleep(300 * time.Millisecond)
		got = rcv.WaitFor(len(got))
		for _, w := range got {
			if !w.Verified {
				t.Errorf("%s: signature did not verify", w.Event)
			}
			var head struct {
				Event      string `json:"event"`
				DeliveryID string `json:"delivery_id"`
			}
			if err := json.Unmarshal(w.Body, &head); err != nil || head.Event != w.Event || head.DeliveryID != w.ID {
				t.Errorf("body %s does not match its headers (event %s, id %s)", w.Body, w.Event, w.ID)
			}
			s := schemas[w.Event]
			if s == nil {
				t.Errorf("the dispatcher sent %s, which the event catalog does not list: add it (docs/event-catalog.md); body %s", w.Event, w.Body)
				continue
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(w.Body))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(doc); err != nil {
				t.Errorf("%s body %s does not match the catalog's schema: %v", w.Event, w.Body, err)
			}
		}
		t.Logf("validated %d webhooks of %d types: %s", len(got), len(seen), strings.Join(want, ", "))
	})
}

// TestEventCatalogRoutes: the catalog is public (credentials, even wrong
// ones, are ignored), cacheable, lists every type in the catalog's order,
// returns one with its schemas and examples, answers an unknown name 404
// EVENT_TYPE_NOT_FOUND, and appends nothing.
func TestEventCatalogRoutes(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})
	before := p.EventCount()
	get := func(path string, headers map[string]string) harness.Response {
		req, _ := http.NewRequest("GET", p.Srv.URL+path, nil)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		return p.Send(req)
	}
	wrong := map[string]string{"X-App-Id": "1", "X-Timestamp": "1", "X-Signature": "00", "X-App-Key": "nope"}
	for _, h := range []map[string]string{nil, wrong} {
		res := get("/open/v1/event-types", h)
		if res.Status != http.StatusOK || res.Header.Get("Cache-Control") != "public, max-age=300" {
			t.Fatalf("list: %d %q %s", res.Status, res.Header.Get("Cache-Control"), res.Raw)
		}
		var list struct {
			EventTypes []struct {
				Name     string `json:"name"`
				Versions []int  `json:"versions"`
			} `json:"event_types"`
		}
		res.Data(t, &list)
		all := eventtypes.All()
		if len(list.EventTypes) != len(all) {
			t.Fatalf("list has %d types, the catalog %d", len(list.EventTypes), len(all))
		}
		for i, e := range list.EventTypes {
			if e.Name != all[i].Name || len(e.Versions) != len(all[i].Versions) {
				t.Errorf("list[%d] = %+v, catalog %s", i, e, all[i].Name)
			}
		}
	}
	res := get("/open/v1/event-types/order.shipped", wrong)
	var typ eventtypes.Type
	if res.Status != http.StatusOK {
		t.Fatalf("one type: %d %s", res.Status, res.Raw)
	}
	res.Data(t, &typ)
	want, _ := eventtypes.Lookup("order.shipped")
	if typ.Name != want.Name || len(typ.Versions) != 1 || string(typ.Versions[0].Example) != string(want.Versions[0].Example) ||
		string(typ.Versions[0].Schema) != string(want.Versions[0].Schema) {
		t.Fatalf("order.shipped served as %s", res.Raw)
	}
	for _, name := range []string{"order.created", "ORDER.SHIPPED", "order.*"} {
		if res := get("/open/v1/event-types/"+name, nil); res.Status != http.StatusNotFound || res.Code() != "EVENT_TYPE_NOT_FOUND" {
			t.Errorf("%s: %d %s", name, res.Status, res.Raw)
		}
	}
	if after := p.EventCount(); after != before {
		t.Fatalf("catalog reads appended %d events", after-before)
	}
}

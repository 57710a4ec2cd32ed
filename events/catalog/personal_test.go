package catalog_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Every event type has an entry in the personal-field registry (an empty
// one when it holds no personal data), and every path names a real field of
// the type, so a new event type or a renamed field cannot slip past the
// encryption and the redaction that rely on the registry.
func TestEveryEventTypeListsItsPersonalFields(t *testing.T) {
	reg := catalog.Registry()
	for _, p := range catalog.Payloads() {
		typ := p.EventType()
		if !reg.Known(typ) {
			t.Errorf("%s: in Payloads but not registered", typ)
		}
		paths, listed := catalog.PersonalFields(typ)
		if !listed {
			t.Errorf("%s: not in the personal-field registry; list its personal JSON paths (or none) in events/catalog/personal.go", typ)
			continue
		}
		for _, path := range paths {
			if !hasPath(reflect.TypeOf(p), strings.Split(path, ".")) {
				t.Errorf("%s: personal path %q names no field of %T", typ, path, p)
			}
		}
	}
	if _, listed := catalog.PersonalFields("no.such.type"); listed {
		t.Error("an unknown type is listed")
	}
}

// hasPath follows JSON names through struct fields (embedded structs inline).
func hasPath(t reflect.Type, path []string) bool {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if len(path) == 0 {
		return true
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	name, _ := strings.CutSuffix(path[0], "[]")
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && tag == "" {
			if hasPath(f.Type, path) {
				return true
			}
			continue
		}
		if tag == name {
			return hasPath(f.Type, path[1:])
		}
	}
	return false
}

func TestRedactKeepsShapeAndOtherFields(t *testing.T) {
	data := `{"app_id":7,"open_user_id":1001,"channel_user_id":"u-1","profile":{"name":"Li Lei","nickname":null,` +
		`"gender":"male","avatar":null,"phone":"13812345678","email":"li@example.com","birth_date":"1990-01-02"},` +
		`"registered_at":"2024-03-05T01:02:03Z","big":12345678901234567890}`
	out, changed, err := catalog.Redact("user.registered", []byte(data))
	if err != nil || !changed {
		t.Fatalf("Redact: %v changed=%v", err, changed)
	}
	for _, secret := range []string{"Li Lei", "13812345678", "li@example.com", "1990-01-02", "male", "u-1"} {
		if strings.Contains(string(out), secret) {
			t.Errorf("redacted data still holds %q: %s", secret, out)
		}
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	profile := got["profile"].(map[string]any)
	if profile["name"] != catalog.Redacted || profile["nickname"] != nil || got["channel_user_id"] != catalog.Redacted || got["app_id"] != 7.0 {
		t.Errorf("redacted = %s", out)
	}
	if !strings.Contains(string(out), "12345678901234567890") {
		t.Errorf("a large number lost its digits: %s", out)
	}

	member := `{"open_user_id":1,"member":{"member_id":3,"name":"Han Meimei","id_number":"11010519491231002X","height":170}}`
	out, _, _ = catalog.Redact("user.family_member.created", []byte(member))
	if strings.Contains(string(out), "11010519491231002X") || strings.Contains(string(out), "170") || !strings.Contains(string(out), `"member_id":3`) {
		t.Errorf("member redacted = %s", out)
	}

	// Erasure records written before hashed binding names carry the
	// channel_user_id in clear: admin reads redact it.
	for _, typ := range []string{"user.erased", "channel_user.unbound", "channel_user.bound", "user.family_member.deleted", "report.created"} {
		old := `{"app_id":1,"open_user_id":2,"channel_user_id":"li@example.com"}`
		if out, changed, _ := catalog.Redact(typ, []byte(old)); !changed || strings.Contains(string(out), "li@example.com") {
			t.Errorf("%s redacted = %s", typ, out)
		}
	}

	plain := `{"app_id":1,  "reason":"x"}`
	if out, changed, _ := catalog.Redact("app.suspended", []byte(plain)); changed || string(out) != plain {
		t.Errorf("data without personal fields changed: %s", out)
	}
	if out, changed, _ := catalog.Redact("no.such.type", []byte(`{"name":"x"}`)); !changed || string(out) != `"[redacted]"` {
		t.Errorf("unknown type redacted = %s", out)
	}
}

// A webhook body's personal fields read as Redacted, the rest of the body
// as it was; an event not listed is redacted whole; a body without
// personal fields comes back byte for byte.
func TestRedactWebhook(t *testing.T) {
	body := []byte(`{"event":"user.family_group.created","delivery_id":"d-1","app_id":1,"open_user_id":7,"channel_user_id":"ouyang@example.com","data":{"family_group_id":3,"app_group_id":10,"name":"欧阳家","created":true}}`)
	got, changed, err := catalog.RedactWebhook("user.family_group.created", body)
	if err != nil || !changed {
		t.Fatalf("redact: %v %v", changed, err)
	}
	var doc struct {
		Event string `json:"event"`
		Data  struct {
			Name          string `json:"name"`
			FamilyGroupID int64  `json:"family_group_id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(got, &doc); err != nil || doc.Event != "user.family_group.created" || doc.Data.Name != catalog.Redacted || doc.Data.FamilyGroupID != 3 ||
		strings.Contains(string(got), "ouyang@") || !strings.Contains(string(got), `"channel_user_id":"[redacted]"`) {
		t.Fatalf("redacted body %s (%v)", got, err)
	}
	// Every user and report body names the partner's channel_user_id: redacted.
	for _, event := range []string{"user.profile.updated", "user.family_group.deleted", "user.family_member.created",
		"user.family_member.updated", "user.family_member.deleted", "health.report.created", "health.report.updated"} {
		b := []byte(`{"event":"` + event + `","open_user_id":7,"channel_user_id":"+86 138 0013 8000","data":{}}`)
		if got, changed, err := catalog.RedactWebhook(event, b); err != nil || !changed || strings.Contains(string(got), "0013") {
			t.Errorf("%s body redacted as %s (%v %v)", event, got, changed, err)
		}
	}
	plain := []byte(`{"event":"health.report.created","open_user_id":7,"open_report_id":9}`)
	if got, changed, err := catalog.RedactWebhook("health.report.created", plain); err != nil || changed || string(got) != string(plain) {
		t.Fatalf("body without personal fields: %s %v %v", got, changed, err)
	}
	if got, changed, err := catalog.RedactWebhook("some.new.event", plain); err != nil || !changed || string(got) != `"[redacted]"` {
		t.Fatalf("unlisted event: %s %v %v", got, changed, err)
	}
}

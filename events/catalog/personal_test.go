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

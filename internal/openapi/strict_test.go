package openapi_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/openapi/openapitest"
)

// walkSchemas calls fn on every schema of the document reachable from where,
// each once (refs are followed once; where names its place for messages).
func walkSchemas(ref *openapi3.SchemaRef, where string, seen map[*openapi3.Schema]bool, fn func(s *openapi3.Schema, where string)) {
	if ref == nil || ref.Value == nil || seen[ref.Value] {
		return
	}
	if ref.Ref != "" {
		where = ref.Ref
	}
	s := ref.Value
	seen[s] = true
	fn(s, where)
	for i, sub := range s.AllOf {
		walkSchemas(sub, fmt.Sprintf("%s/allOf/%d", where, i), seen, fn)
	}
	for i, sub := range s.AnyOf {
		walkSchemas(sub, fmt.Sprintf("%s/anyOf/%d", where, i), seen, fn)
	}
	for i, sub := range s.OneOf {
		walkSchemas(sub, fmt.Sprintf("%s/oneOf/%d", where, i), seen, fn)
	}
	walkSchemas(s.Not, where+"/not", seen, fn)
	walkSchemas(s.Items, where+"/items", seen, fn)
	for name, sub := range s.Properties {
		walkSchemas(sub, where+"/properties/"+name, seen, fn)
	}
	if s.AdditionalProperties.Schema != nil {
		walkSchemas(s.AdditionalProperties.Schema, where+"/additionalProperties", seen, fn)
	}
}

// isNullValue tells the document's NullValue alternative.
func isNullValue(r *openapi3.SchemaRef) bool { return strings.HasSuffix(r.Ref, "/NullValue") }

// TestNullableReadsStrictly: under OAS 3.0.3 `nullable: true` only widens a
// `type` in the same schema object, so strict validators and generators
// refuse null where it stands without a type or beside an allOf, anyOf or
// oneOf whose parts refuse null. A nullable composition must offer the
// NullValue alternative.
func TestNullableReadsStrictly(t *testing.T) {
	doc := openapitest.Doc(t)
	seen := map[*openapi3.Schema]bool{}
	check := func(s *openapi3.Schema, where string) {
		if !s.Nullable {
			return
		}
		if s.Type == nil || len(*s.Type) == 0 {
			t.Errorf("%s: nullable without a type", where)
		}
		if len(s.AllOf) > 0 {
			t.Errorf("%s: nullable beside allOf (null fails the allOf's parts); use anyOf with NullValue", where)
		}
		if (len(s.AnyOf) > 0 && !hasNull(s.AnyOf)) || (len(s.OneOf) > 0 && !hasNull(s.OneOf)) {
			t.Errorf("%s: nullable beside anyOf/oneOf without the NullValue alternative", where)
		}
	}
	for name, s := range doc.Components.Schemas {
		walkSchemas(s, "#/components/schemas/"+name, seen, check)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for _, p := range op.Parameters {
				if p.Value != nil {
					walkSchemas(p.Value.Schema, method+" "+path+" "+p.Value.Name, seen, check)
				}
			}
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				for ct, mt := range op.RequestBody.Value.Content {
					walkSchemas(mt.Schema, method+" "+path+" "+ct, seen, check)
				}
			}
			for status, r := range op.Responses.Map() {
				if r.Value == nil {
					continue
				}
				for ct, mt := range r.Value.Content {
					walkSchemas(mt.Schema, method+" "+path+" "+status+" "+ct, seen, check)
				}
			}
		}
	}
}

func hasNull(alts openapi3.SchemaRefs) bool {
	for _, a := range alts {
		if isNullValue(a) {
			return true
		}
	}
	return false
}

// TestInputIntegersStateTheBound: the body decoder refuses integers beyond
// 2^53-1 (not exact in every client), so every int64 a request body or an
// endpoint_id filter takes says maximum: 9007199254740991, and a generated
// client can refuse what the server would.
func TestInputIntegersStateTheBound(t *testing.T) {
	doc := openapitest.Doc(t)
	const maxInt = 1<<53 - 1
	seen := map[*openapi3.Schema]bool{}
	check := func(s *openapi3.Schema, where string) {
		if s.Type == nil || !s.Type.Is("integer") || s.Format != "int64" {
			return
		}
		if s.Max == nil || *s.Max > maxInt {
			t.Errorf("%s: an int64 input without maximum %d", where, maxInt)
		}
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for _, p := range op.Parameters {
				if p.Value != nil && p.Value.Name == "endpoint_id" {
					walkSchemas(p.Value.Schema, method+" "+path+" endpoint_id", seen, check)
				}
			}
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				for ct, mt := range op.RequestBody.Value.Content {
					walkSchemas(mt.Schema, method+" "+path+" "+ct, seen, check)
				}
			}
		}
	}
}

// TestRequestExamplesExpireInTheFuture: a partner copying a documented
// card batch must not be refused for an expiry already past.
func TestRequestExamplesExpireInTheFuture(t *testing.T) {
	doc := openapitest.Doc(t)
	var walk func(v any, where string)
	walk = func(v any, where string) {
		switch x := v.(type) {
		case map[string]any:
			for k, sub := range x {
				if s, ok := sub.(string); ok && k == "expires_at" {
					at, err := time.Parse(time.RFC3339, s)
					if err != nil {
						at, err = time.Parse(time.DateTime, s)
					}
					if err != nil || at.Before(time.Now().AddDate(10, 0, 0)) {
						t.Errorf("%s: expires_at example %q is not far in the future", where, s)
					}
				}
				walk(sub, where+"/"+k)
			}
		case []any:
			for i, sub := range x {
				walk(sub, fmt.Sprintf("%s/%d", where, i))
			}
		}
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				continue
			}
			for ct, mt := range op.RequestBody.Value.Content {
				walk(mt.Example, method+" "+path+" "+ct)
				for name, ex := range mt.Examples {
					if ex.Value != nil {
						walk(ex.Value.Value, method+" "+path+" "+ct+" "+name)
					}
				}
				if mt.Schema != nil && mt.Schema.Value != nil {
					walkSchemas(mt.Schema, method+" "+path, map[*openapi3.Schema]bool{}, func(s *openapi3.Schema, where string) {
						if e, ok := s.Example.(string); ok && strings.HasSuffix(where, "/expires_at") {
							walk(map[string]any{"expires_at": e}, where)
						}
					})
				}
			}
		}
	}
}

// TestTimeInputPatternAdmitsWhatTheServerReads: the times the platform
// reads are stated by a pattern (Y-m-d H:i:s is not RFC 3339, so not
// format: date-time); every form the server accepts matches it, so a
// client validating against the document never refuses a time the
// platform would take.
func TestTimeInputPatternAdmitsWhatTheServerReads(t *testing.T) {
	doc := openapitest.Doc(t)
	loc := time.FixedZone("CST", 8*3600)
	pattern := doc.Components.Schemas["TimeInput"].Value.Pattern
	re := regexp.MustCompile(pattern)
	for _, s := range []string{"2024-05-01T08:00:00+08:00", "2024-05-01T00:00:00Z", "2024-05-01T08:00:00.123456789-05:30",
		"2024-05-01T08:00:00", "2024-05-01T08:00:00.5", "2024-05-01 08:00:00", "2024-05-01", "yesterday", "2024-05-01 08:00",
		"2024-05-01T08:00:00+0800", "20240501"} {
		_, ok := httpapi.ParseTime(s, loc)
		if ok && !re.MatchString(s) {
			t.Errorf("the server reads %q but TimeInput's pattern refuses it", s)
		}
		if !ok && re.MatchString(s) {
			t.Errorf("TimeInput's pattern admits %q, which the server refuses", s)
		}
	}
	for _, name := range []string{"IngestTime"} {
		if got := doc.Components.Schemas[name].Value.Pattern; got != pattern {
			t.Errorf("%s's pattern %q differs from TimeInput's %q", name, got, pattern)
		}
	}
	if got := doc.Components.Schemas["CardInput"].Value.Properties["expires_at"].Value.Pattern; got != pattern {
		t.Errorf("CardInput.expires_at's pattern %q differs from TimeInput's", got)
	}
}

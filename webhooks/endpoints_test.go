package webhooks

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// A response excerpt is at most catalog.ExcerptBytes of valid UTF-8, cut
// at a character boundary, whatever the receiver answered.
func TestExcerptIsBoundedValidText(t *testing.T) {
	long := strings.Repeat("李", catalog.ExcerptBytes) // 3 bytes each
	for in, check := range map[string]func(string) bool{
		"ok":          func(s string) bool { return s == "ok" },
		"":            func(s string) bool { return s == "" },
		"a\x00b\xffc": func(s string) bool { return s == "a?b?c" },
		long: func(s string) bool {
			return len(s) <= catalog.ExcerptBytes && len(s) > catalog.ExcerptBytes-3 && strings.HasPrefix(long, s)
		},
		strings.Repeat("x", 10_000): func(s string) bool { return len(s) == catalog.ExcerptBytes },
	} {
		got := readExcerpt(strings.NewReader(in))
		if !utf8.ValidString(got) || !check(got) {
			t.Errorf("excerpt of %d bytes = %q", len(in), got)
		}
	}
}

// Every endpoint's delivery of one event has its own stable id, the
// default endpoint's is the id deliveries always had, and each body
// repeats its own id; a test event goes to the endpoint it names.
func TestEndpointDeliveryIDsAndBodies(t *testing.T) {
	env := events.Envelope{Recorded: events.Recorded{ID: "evt-1"}, Payload: &catalog.FamilyGroupUpserted{OpenUserID: 7, ChannelUserID: "c", FamilyGroupID: 3, Created: true},
		Metadata: events.Metadata{AppID: 9, OccurredAt: time.Unix(0, 0)}}
	def, ok := Render(env, time.UTC)
	if !ok || !strings.Contains(string(def.Body), DeliveryID(9, "evt-1")) || EndpointDeliveryID(9, domain.DefaultEndpointID, "evt-1") != DeliveryID(9, "evt-1") {
		t.Fatalf("default endpoint rendering %s", def.Body)
	}
	other, _ := RenderFor(env, time.UTC, 21)
	id21 := EndpointDeliveryID(9, 21, "evt-1")
	if id21 == DeliveryID(9, "evt-1") || id21 == EndpointDeliveryID(9, 22, "evt-1") || id21 != EndpointDeliveryID(9, 21, "evt-1") {
		t.Fatalf("endpoint delivery ids are not distinct and stable: %s", id21)
	}
	if strings.Replace(string(other.Body), id21, DeliveryID(9, "evt-1"), 1) != string(def.Body) {
		t.Fatalf("endpoint body %s differs from the default's %s beyond its id", other.Body, def.Body)
	}
	test := events.Envelope{Recorded: events.Recorded{ID: "evt-2"}, Payload: &catalog.AppWebhookTestRequested{AppID: 9, EndpointID: 21},
		Metadata: events.Metadata{AppID: 9, OccurredAt: time.Unix(0, 0)}}
	r, ok := Render(test, time.UTC)
	if !ok || !r.Only || r.Endpoint != 21 || r.Event != domain.TestEvent || !strings.Contains(string(r.Body), EndpointDeliveryID(9, 21, "evt-2")) {
		t.Fatalf("test event %+v %s", r, r.Body)
	}
}

package partneropen

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// examplePath is a catalogued type's example body: rendered by the
// platform's dispatcher renderer and checked in beside the catalog.
func examplePath(t EventType) string {
	return filepath.Join("..", "..", "internal", "eventtypes", "examples", fmt.Sprintf("%s.v%d.json", t.Name, t.Version))
}

// TestParseEventTypesEveryCataloguedEvent parses the platform's own example
// of every catalogued type into exactly one typed body.
func TestParseEventTypesEveryCataloguedEvent(t *testing.T) {
	if len(EventTypes) < 11 {
		t.Fatalf("only %d catalogued types", len(EventTypes))
	}
	for _, typ := range EventTypes {
		body, err := os.ReadFile(examplePath(typ))
		if err != nil {
			t.Fatal(err)
		}
		ev, err := ParseEvent(body)
		if err != nil {
			t.Errorf("%s: %v", typ.Name, err)
			continue
		}
		set := 0
		for _, p := range []bool{ev.HealthReport != nil, ev.PluginReportReady != nil, ev.OrderShipped != nil,
			ev.ProfileUpdated != nil, ev.FamilyGroupCreated != nil, ev.FamilyGroupDeleted != nil,
			ev.FamilyMemberCreated != nil, ev.FamilyMemberUpdated != nil, ev.FamilyMemberDeleted != nil, ev.Test != nil} {
			if p {
				set++
			}
		}
		if ev.Type != typ.Name || ev.DeliveryID == "" || set != 1 || !IsEventType(typ.Name) {
			t.Errorf("%s: type %q delivery %q, %d typed bodies", typ.Name, ev.Type, ev.DeliveryID, set)
		}
	}
	ev, err := ParseEvent([]byte(`{"event":"health.report.deleted","delivery_id":"d"}`))
	if !errors.Is(err, ErrUnknownEvent) || ev == nil || ev.Type != "health.report.deleted" || IsEventType("health.report.deleted") {
		t.Fatalf("an uncatalogued type: %v %+v", err, ev)
	}
}

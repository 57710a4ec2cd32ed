package harness

import (
	"context"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
)

// Dump is every event's data in the store, one per line.
func Dump(t *testing.T, s events.Store) string {
	t.Helper()
	recs, err := s.ReadAll(context.Background(), events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range recs {
		b.Write(r.Data)
		b.WriteByte('\n')
	}
	return b.String()
}

// AuditFact is one fact of GET /admin/v1/audit as an auditor reads it.
type AuditFact struct {
	Seq      int64    `json:"seq"`
	EventID  string   `json:"event_id"`
	Actor    string   `json:"actor"`
	Action   string   `json:"action"`
	Subjects []string `json:"subjects"`
	EventIDs []string `json:"event_ids"`
	AppID    int64    `json:"app_id"`
	Reason   string   `json:"reason"`
	At       string   `json:"at"`
}

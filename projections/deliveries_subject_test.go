package projections

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/privacy"
)

// A delivery's subject (which rows a user's erasure blanks) is the user
// privacy sealed its body for, whichever reader decided it: the direct one,
// or encoding/json where the direct one declines (an escaped key, a body
// that does not parse).
func TestDeliverySubjectIsTheSealingUser(t *testing.T) {
	for _, c := range []struct{ body, source, want string }{
		{`{"event_type":"user.registered","open_user_id":42,"data":{"open_user_id":9}}`, "user-42", "user-42"},
		{`{"OPEN_USER_ID":42}`, "report-1", "user-42"},
		{`{"open_user_id":42,"open_user_id":null}`, "report-1", ""},
		{`{"open_user_id":"42"}`, "user-7", "user-7"},             // encoding/json errs: the source stream decides
		{`{"open_user_id":42,"open_user_id":1.5}`, "order-3", ""}, // likewise
		{`{"open\u005fuser_id":42}`, "order-3", "user-42"},        // declined: encoding/json unescapes the key
		{`{"open_user_id":42`, "user-7", "user-7"},                // does not parse
		{`{"order_id":7}`, "order-7", ""},
		{"", "user-7", ""}, // erased
	} {
		p := &catalog.DeliveryCreated{Body: c.body, SourceStream: c.source}
		got := deliverySubject(p)
		if got != c.want {
			t.Errorf("body %s from %s: subject %q, want %q", c.body, c.source, got, c.want)
		}
		if got != "" {
			data, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			if sealed := privacy.Subject("delivery-x", p.EventType(), data); sealed != got {
				t.Errorf("body %s from %s: subject %q, privacy seals it for %q", c.body, c.source, got, sealed)
			}
		}
		var ref struct {
			OpenUserID *int64 `json:"open_user_id"`
		}
		if c.body != "" && json.Unmarshal([]byte(c.body), &ref) == nil && ref.OpenUserID != nil && *ref.OpenUserID > 0 &&
			got != "user-"+strconv.FormatInt(*ref.OpenUserID, 10) {
			t.Errorf("body %s: subject %q, encoding/json reads user %d", c.body, got, *ref.OpenUserID)
		}
	}
}

// A rendered body's subject costs one allocation, the subject's own: a
// rebuild names one for every delivery of the log.
func TestDeliverySubjectAllocatesOnce(t *testing.T) {
	p := &catalog.DeliveryCreated{Body: `{"event":"user.registered","delivery_id":"d-1","app_id":2,"open_user_id":123456789}`, SourceStream: "user-123456789"}
	if got := deliverySubject(p); got != "user-123456789" {
		t.Fatalf("subject %q", got)
	}
	if n := testing.AllocsPerRun(100, func() { deliverySubject(p) }); n != 1 {
		t.Errorf("%v allocations per subject, want 1", n)
	}
}

package eventtypes

import (
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Sample values of a triggered sandbox event: recognisable, and ids no
// real user, member, group, report or order item is given (the platform
// hands ids out from 1 upwards; this is the largest integer every JSON
// parser reads exactly).
const (
	sandboxChannelUser = "sandbox-user"
	sandboxID          = 1<<53 - 1
	sandboxOpenUser    = sandboxID
)

// sandboxFunc makes the source event a sandbox trigger of a type renders
// as, for the app at the trigger's instant.
type sandboxFunc func(appID int64, at time.Time) events.Payload

// Triggerable lists, in the catalog's order, the types a sandbox app can
// trigger (POST /open/v1/webhooks/sandbox-events, openplatform trigger):
// every catalogued type with a sandbox sample, which is every type but
// the per-endpoint webhook.test.
func Triggerable() []string {
	var out []string
	for _, e := range table {
		if e.sandbox != nil {
			out = append(out, e.name)
		}
	}
	return out
}

// SandboxSample is the source event a sandbox trigger of the webhook event
// type name renders as, for appID at instant at: the real event of that
// type with sample values, so the dispatcher renders it through the real
// type's code. ok is false for a type that cannot be triggered.
func SandboxSample(name string, appID int64, at time.Time) (events.Payload, bool) {
	for _, e := range table {
		if e.name == name && e.sandbox != nil {
			return e.sandbox(appID, at), true
		}
	}
	return nil, false
}

var sandboxMember = catalog.Member{MemberID: sandboxID, AppUserID: "sandbox-member", FamilyGroupID: sandboxID, AppGroupID: 1}

var sandboxReportType = "ecg"

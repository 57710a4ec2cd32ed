package portal_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/portal/portaltest"
)

// The access-log page shows a developer the reads of its app's users' data
// (the operator by role and pseudonymous id, with the reason), filters by
// user and date, and shows nothing of another app's users; another
// developer's app is a 404.
func TestAccessLogPage(t *testing.T) {
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir()})
	b, _ := p.Developer(portaltest.Email(t, "log"), true)
	mine := createApp(t, b, "Mine", "channel_users")
	other, _ := p.Developer(portaltest.Email(t, "other"), true)
	theirs := createApp(t, other, "Theirs", "channel_users")
	at := time.Now().UTC().Truncate(time.Second)
	appendTo := func(stream string, appID int64, pl events.Payload) {
		t.Helper()
		ev, err := p.Node.Registry.Encode(pl, events.Metadata{AppID: appID, Actor: "test", OccurredAt: at})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Node.Events.Append(context.Background(), stream, events.Any(), ev); err != nil {
			t.Fatal(err)
		}
	}
	appendTo(domain.UserStream(901), mine.AppID, catalog.UserRegistered{AppID: mine.AppID, OpenUserID: 901, Profile: catalog.Profile{Name: "x", Gender: "unknown"}})
	appendTo(domain.UserStream(902), theirs.AppID, catalog.UserRegistered{AppID: theirs.AppID, OpenUserID: 902, Profile: catalog.Profile{Name: "y", Gender: "unknown"}})
	// One reveal of a log page that named both apps' users.
	appendTo(domain.AuditStream("operator:bootstrap"), 0, catalog.AccessAudited{Actor: "operator:bootstrap", Action: catalog.AuditRevealEvents,
		Subjects: []string{"user-901", "user-902", domain.AppStream(mine.AppID), domain.AppStream(theirs.AppID)}, Reason: "DPO ticket 12", At: at})

	path := fmt.Sprintf("/portal/apps/%d/access-log", mine.AppID)
	var page portaltest.Page
	deadline := time.Now().Add(10 * time.Second)
	for {
		page = b.Get(path)
		if strings.Contains(page.Body, "DPO ticket 12") || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	text := page.Text()
	if page.Status != http.StatusOK || !strings.Contains(text, "reveal.events") || !strings.Contains(text, "admin (operator:bootstrap)") ||
		!showsNumber(text, "901") || showsNumber(text, "902") {
		t.Fatalf("access log page %d:\n%s", page.Status, text)
	}
	if got := b.Get(path + "?open_user_id=902"); got.Status != http.StatusNotFound {
		t.Fatalf("another app's user as a filter: %d", got.Status)
	}
	if got := b.Get(path + "?from=" + at.AddDate(0, 0, 2).Format(time.DateOnly)); got.Status != http.StatusOK || strings.Contains(got.Body, "DPO ticket 12") {
		t.Fatalf("from the day after tomorrow: %d", got.Status)
	}
	if got := b.Get(path + "?from=yesterday"); got.Status != http.StatusBadRequest {
		t.Fatalf("a bad date: %d", got.Status)
	}
	if got := b.Get(fmt.Sprintf("/portal/apps/%d/access-log", theirs.AppID)); got.Status != http.StatusNotFound {
		t.Fatalf("another developer's app: %d", got.Status)
	}
	if app := b.Get(fmt.Sprintf("/portal/apps/%d", mine.AppID)); !strings.Contains(app.Body, path) {
		t.Fatal("the app page does not link to its access log")
	}
}

// showsNumber says whether text shows id as a number of its own: the
// signed-in developer's random e-mail address may hold the same digits.
func showsNumber(text, id string) bool {
	return regexp.MustCompile(`\b` + id + `\b`).MatchString(text)
}

package commandapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// developerRoutes serve the qualification review of developer accounts,
// the decision /portal/ops/developers takes, through the same command
// (commands.Developers.Review). Unlike an app's or a provider's review it
// is not final: a rejected developer may be approved once the papers
// arrive, and an approval may be withdrawn; only repeating the current
// decision with the same reason is refused (409 ALREADY_REVIEWED).
func (a *API) developerRoutes() []Route {
	return []Route{
		{Method: "POST", Path: "/admin/v1/developers/:developerId/review", Handle: a.admin(a.reviewDeveloper)},
	}
}

func (a *API) reviewDeveloper(c *call) error {
	ids, err := c.ids("developerId")
	if err != nil {
		return err
	}
	approve, notes, err := c.review()
	if err != nil {
		return err
	}
	if a.Developers == nil {
		return domain.ErrDeveloperNotFound // a node without the portal has no accounts
	}
	status := catalog.DeveloperRejected
	if approve {
		status = catalog.DeveloperApproved
	}
	pos, err := a.Developers.Review(c.r.Context(), ids[0], status, notes, c.meta)
	if err != nil {
		return notesField(err)
	}
	if a.DevelopersReady != nil {
		// The answer holds for a listing on this node at once.
		ctx, cancel := context.WithTimeout(c.r.Context(), 5*time.Second)
		err := a.DevelopersReady.WaitFor(ctx, pos)
		cancel()
		if err != nil {
			return err
		}
	}
	decision := map[bool]string{true: "approve", false: "reject"}[approve]
	httpapi.OK(c.w, http.StatusOK, map[string]any{"developer_id": ids[0], "decision": decision, "status": status, "notes": notes})
	return nil
}

// notesField names the command's reason by the body's field (notes, as in
// every review body of the admin API).
func notesField(err error) error {
	var v *domain.ValidationError
	if !errors.As(err, &v) || v.Fields["reason"] == nil {
		return err
	}
	out := &domain.ValidationError{}
	for f, msgs := range v.Fields {
		if f == "reason" {
			f = "notes"
		}
		for _, m := range msgs {
			out.Add(f, m)
		}
	}
	return out
}

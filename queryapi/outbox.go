package queryapi

import (
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/projections/directory"
)

// Outbox is the developer portal's mail outbox as the admin API reads it,
// so operators without a browser (platformctl outbox) see the same
// messages, reset links included, as /portal/ops/outbox.
type Outbox interface {
	// Outbox returns the messages newest first (pending: only those still
	// to be sent).
	Outbox(pending bool) []directory.OutboxMail
}

// outboxStatuses are the statuses the status filter accepts.
var outboxStatuses = []string{directory.MailQueued, directory.MailRetrying, directory.MailSent, directory.MailFailed}

func (q *API) outboxRoutes() []httpapi.Route {
	return []httpapi.Route{
		{Method: "GET", Path: "/admin/v1/outbox", Handle: q.admin(q.listOutbox)},
	}
}

// listOutbox lists the portal's mail, newest first, optionally one status
// only. The messages carry sign-up and password-reset links, so the role
// table lets admins only read it (auth.Permit).
func (q *API) listOutbox(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	status, err := statusParam(r, outboxStatuses)
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	var mails []directory.OutboxMail
	if q.Outbox != nil {
		mails = q.Outbox.Outbox(false)
	}
	out := make([]map[string]any, 0, len(mails))
	for _, m := range mails {
		if status != "" && m.Status != status {
			continue
		}
		out = append(out, map[string]any{
			"mail_id": m.MailID, "developer_id": m.DeveloperID, "to": m.To, "subject": m.Subject, "body": m.Body,
			"queued_at": m.QueuedAt.UTC().Format(time.RFC3339), "status": m.Status, "attempts": m.Attempts, "last_error": m.LastError,
		})
	}
	httpapi.OK(w, http.StatusOK, map[string]any{"mails": out})
}

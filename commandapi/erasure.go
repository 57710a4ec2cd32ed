package commandapi

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// maxErasureReason bounds the operator's note kept in the erasure event.
const maxErasureReason = 500

// eraseUser erases a channel user (admin role only, auth.Permit): destroys
// their data key, records user.erased, frees their channel_user_id.
func (a *API) eraseUser(c *call) error {
	ids, err := c.ids("openUserId")
	if err != nil {
		return err
	}
	var reason string
	if err := c.decode(func(o *httpapi.Object) { reason = o.RequiredString("reason") }); err != nil {
		return err
	}
	v := &domain.ValidationError{}
	if strings.TrimSpace(reason) == "" {
		v.Add("reason", "is required")
	} else if utf8.RuneCountInString(reason) > maxErasureReason {
		v.Add("reason", "is longer than 500 characters")
	}
	if err := v.Err(); err != nil {
		return err
	}
	pos, err := a.Users.Erase(c.r.Context(), ids[0], reason, c.meta)
	if err != nil {
		return err
	}
	// The read models drop the user before the answer, on this node.
	if a.ErasureApplied != nil {
		ctx, cancel := context.WithTimeout(c.r.Context(), 5*time.Second)
		defer cancel()
		_ = a.ErasureApplied.WaitFor(ctx, pos)
	}
	httpapi.OK(c.w, http.StatusOK, map[string]any{"open_user_id": ids[0], "erased": true})
	return nil
}

// acknowledgeErasure records that the partner received the user.erased
// webhook of one of its users and erased its own copies. The body is
// empty or an empty object. A repeat answers the first acknowledgement
// and appends nothing; another app's erasure, a person who is not erased,
// and an unknown id are all ERASURE_NOT_FOUND.
func (a *API) acknowledgeErasure(c *call) error {
	ids, err := c.ids("openUserId")
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(c.body)) > 0 {
		err = c.decode(func(*httpapi.Object) {})
	} else {
		err = c.claim()
	}
	if err != nil {
		return err
	}
	ack, err := a.Users.AcknowledgeErasure(c.r.Context(), c.app.AppID, ids[0], c.meta)
	if err != nil {
		return err
	}
	c.answer(ack.Position, false, map[string]any{
		"open_user_id":    ack.OpenUserID,
		"erased_at":       ack.ErasedAt.In(a.Location).Format(time.RFC3339),
		"acknowledged_at": ack.AcknowledgedAt.In(a.Location).Format(time.RFC3339),
	})
	return nil
}

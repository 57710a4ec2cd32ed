package commandapi

import (
	"context"
	"net/http"
	"time"

	"github.com/healthtech/partner-open-platform/events"

	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

func (a *API) operatorRoutes() []Route {
	return []Route{
		{Method: "POST", Path: "/admin/v1/operators", Handle: a.admin(a.createOperator)},
		{Method: "POST", Path: "/admin/v1/operators/:operatorId/revoke", Handle: a.admin(a.revokeOperator)},
	}
}

// createOperator answers the new operator's token, this once.
func (a *API) createOperator(c *call) error {
	var name, role string
	if err := c.decode(func(o *httpapi.Object) {
		name, role = o.RequiredString("name"), o.RequiredString("role")
	}); err != nil {
		return err
	}
	op, err := a.Operators.CreateOperator(c.r.Context(), name, role, c.meta)
	if err != nil {
		return err
	}
	if err := a.waitOperators(c, op.Position); err != nil {
		return err
	}
	httpapi.OK(c.w, http.StatusCreated, map[string]any{
		"operator_id": op.OperatorID, "name": op.Name, "role": op.Role, "token": op.Token,
	})
	return nil
}

// revokeOperator ends an operator's token; revoking twice answers the same.
func (a *API) revokeOperator(c *call) error {
	ids, err := c.ids("operatorId")
	if err != nil {
		return err
	}
	pos, err := a.Operators.RevokeOperator(c.r.Context(), ids[0], c.meta)
	if err != nil {
		return err
	}
	if err := a.waitOperators(c, pos); err != nil {
		return err
	}
	httpapi.OK(c.w, http.StatusOK, map[string]any{"operator_id": ids[0], "revoked": true})
	return nil
}

// waitOperators makes an operator change hold on this node before answering.
func (a *API) waitOperators(c *call, pos events.Position) error {
	if a.OperatorsReady == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.r.Context(), 5*time.Second)
	defer cancel()
	return a.OperatorsReady.WaitFor(ctx, pos)
}

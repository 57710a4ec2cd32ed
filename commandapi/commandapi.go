// Package commandapi is the thin HTTP edge of the write side: it
// authenticates, decodes the body into a command, runs it, records the
// write's position for read-your-writes, and answers in the spec's envelope.
package commandapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/projections"
)

// Route is one endpoint for the node's router.
type Route struct {
	Method, Path string
	Handle       httprouter.Handle
}

// AppWaiter lets app creation answer only once this node can authenticate the new app.
type AppWaiter interface {
	WaitFor(ctx context.Context, pos events.Position) error
}

// API holds what the write handlers need.
type API struct {
	Users      *commands.Users
	Apps       *commands.Apps
	SchemeM    auth.SchemeM
	Admin      auth.Admin
	Watermarks *projections.Watermarks
	AppsReady  AppWaiter
}

// Routes lists the write endpoints.
func (a *API) Routes() []Route {
	return []Route{
		{"POST", "/open/v1/channel/users", a.partner(a.register)},
		{"PATCH", "/open/v1/channel/users/:openUserId", a.partner(a.patchUser)},
		{"POST", "/open/v1/channel/users/:openUserId/family-groups", a.partner(a.upsertGroup)},
		{"DELETE", "/open/v1/channel/users/:openUserId/family-groups/:groupId", a.partner(a.dissolveGroup)},
		{"POST", "/open/v1/channel/users/:openUserId/family-members", a.partner(a.upsertMember)},
		{"DELETE", "/open/v1/channel/users/:openUserId/family-members/:memberId", a.partner(a.deleteMember)},
		{"POST", "/admin/v1/apps", a.admin(a.createApp)},
		{"POST", "/admin/v1/apps/:appId/rotate-secret", a.admin(a.rotateSecret)},
	}
}

// call is one authenticated partner request.
type call struct {
	w      http.ResponseWriter
	r      *http.Request
	ps     httprouter.Params
	app    projections.App
	body   []byte
	meta   commands.Meta
	config *API
}

// answer records a successful write for the app's next read and answers
// 201 when it created the resource, 200 otherwise.
func (c *call) answer(pos events.Position, created bool, data any) {
	c.config.Watermarks.Wrote(c.app.AppID, pos)
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	httpapi.OK(c.w, status, data)
}

// ids parses the named positive-integer path parameters in order.
func (c *call) ids(names ...string) ([]int64, error) {
	out := make([]int64, len(names))
	for i, name := range names {
		id, err := PathID(c.ps, name, false)
		if err != nil {
			return nil, err
		}
		out[i] = id
	}
	return out, nil
}

// decode parses the body as one JSON object, lets read pick its fields, and
// returns every type problem read found.
func (c *call) decode(read func(*httpapi.Object)) error {
	o, err := httpapi.ParseObject(c.body)
	if err != nil {
		return err
	}
	read(o)
	return o.Err()
}

func (a *API) partner(h func(*call) error) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		body, err := httpapi.ReadBody(r)
		if err != nil {
			httpapi.Error(w, r, err)
			return
		}
		app, err := a.SchemeM.Verify(r, body)
		if err != nil {
			httpapi.Error(w, r, err)
			return
		}
		c := &call{w: w, r: r, ps: ps, app: app, body: body, config: a, meta: commands.Meta{
			AppID: app.AppID, Actor: "app:" + strconv.FormatInt(app.AppID, 10), RequestID: w.Header().Get(httpapi.RequestIDHeader),
		}}
		if err := h(c); err != nil {
			httpapi.Error(w, r, err)
		}
	}
}

func (a *API) admin(h func(*call) error) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		if err := a.Admin.Verify(r); err != nil {
			httpapi.Error(w, r, err)
			return
		}
		body, err := httpapi.ReadBody(r)
		if err != nil {
			httpapi.Error(w, r, err)
			return
		}
		c := &call{w: w, r: r, ps: ps, body: body, config: a, meta: commands.Meta{
			Actor: "operator", RequestID: w.Header().Get(httpapi.RequestIDHeader),
		}}
		if err := h(c); err != nil {
			httpapi.Error(w, r, err)
		}
	}
}

// PathID parses a positive integer path parameter, answering VALIDATION_ERROR otherwise.
func PathID(ps httprouter.Params, name string, allowZero bool) (int64, error) {
	n, err := strconv.ParseInt(ps.ByName(name), 10, 64)
	if err != nil || n < 0 || (n == 0 && !allowZero) || n >= 1<<53 {
		v := &commands.ValidationError{}
		v.Add(name, "must be a positive integer")
		return 0, v
	}
	return n, nil
}

// waitApps makes admin writes visible to this node's authentication before answering.
func (a *API) waitApps(ctx context.Context, pos events.Position) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return a.AppsReady.WaitFor(ctx, pos)
}

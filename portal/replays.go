package portal

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// The webhook replay pages: a developer asks, from an endpoint's delivery
// log, for the app's past events of chosen types since a time to be
// delivered again to that endpoint, follows the replay's progress and may
// cancel it. The commands are the API's (commands.Replays), with the
// developer as actor; another developer's replay answers the 404 page.

func init() {
	addRoutes(func(s *Server) {
		if s.Replays == nil {
			return
		}
		s.Developer("POST /portal/apps/{appId}/endpoints/{endpointId}/replays", s.requestReplay)
		s.Developer("GET /portal/apps/{appId}/replays/{replayId}", s.replayPage)
		s.Developer("POST /portal/apps/{appId}/replays/{replayId}/cancel", s.cancelReplay)
	})
}

func replayPath(appID, replayID int64) string {
	return "/portal/apps/" + strconv.FormatInt(appID, 10) + "/replays/" + strconv.FormatInt(replayID, 10)
}

// requestReplay starts a replay from the delivery log's form: events
// (separated by commas or spaces) and since (a UTC date and time).
func (s *Server) requestReplay(w http.ResponseWriter, r *http.Request) {
	app, ep, ok := s.ownedEndpoint(r)
	if !ok {
		s.NotFound(w, r)
		return
	}
	in := commands.ReplayInput{EndpointID: ep.EndpointID, Events: strings.FieldsFunc(r.PostFormValue("events"), func(c rune) bool { return c == ',' || c == ' ' })}
	if v := strings.TrimSpace(r.PostFormValue("since")); v != "" {
		t, ok := httpapi.ParseTime(v, time.UTC)
		if !ok { // a datetime-local input sends no seconds
			var err error
			t, err = time.ParseInLocation("2006-01-02T15:04", v, time.UTC)
			ok = err == nil
		}
		if !ok {
			e := &domain.ValidationError{}
			e.Add("since", "must be a date and time")
			s.Fail(w, r, e)
			return
		}
		in.Since = &t
	}
	rp, _, err := s.Replays.Request(r.Context(), app.AppID, in, Meta(w, r))
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.Redirect(w, r, replayPath(app.AppID, rp.ReplayID), Flash{Kind: "info", Message: "Replay " + strconv.FormatInt(rp.ReplayID, 10) + " started."})
}

// ownedReplay is the replay named in the URL, if the signed-in developer
// owns its app.
func (s *Server) ownedReplay(r *http.Request) (domain.App, commands.Replay, bool) {
	app, ok := s.ownApp(r)
	if !ok {
		return domain.App{}, commands.Replay{}, false
	}
	id, err := strconv.ParseInt(r.PathValue("replayId"), 10, 64)
	if err != nil || id <= 0 {
		return domain.App{}, commands.Replay{}, false
	}
	rp, err := s.Replays.Get(r.Context(), app.AppID, id)
	return app, rp, err == nil
}

type replayData struct {
	App    domain.App
	Replay commands.Replay
	Events string
}

func (s *Server) replayPage(w http.ResponseWriter, r *http.Request) {
	app, rp, ok := s.ownedReplay(r)
	if !ok {
		s.NotFound(w, r)
		return
	}
	s.Render(w, r, http.StatusOK, "replays_page.html", replayData{App: app, Replay: rp, Events: strings.Join(rp.Events, ", ")})
}

func (s *Server) cancelReplay(w http.ResponseWriter, r *http.Request) {
	app, rp, ok := s.ownedReplay(r)
	if !ok {
		s.NotFound(w, r)
		return
	}
	if _, err := s.Replays.Cancel(r.Context(), app.AppID, rp.ReplayID, Meta(w, r)); err != nil {
		s.Fail(w, r, err)
		return
	}
	s.Redirect(w, r, replayPath(app.AppID, rp.ReplayID), Flash{Kind: "info", Message: "Replay " + strconv.FormatInt(rp.ReplayID, 10) + " canceled."})
}

package harness

import (
	"bytes"
	"net/http"
)

// Replay sends a request to path with method and body, carrying the scheme M
// headers of an earlier request, as an attacker who captured them would.
func (a *App) Replay(captured *http.Request, method, path string, body []byte) Response {
	a.P.T.Helper()
	req, err := http.NewRequest(method, a.P.Srv.URL+path, bytes.NewReader(body))
	if err != nil {
		a.P.T.Fatal(err)
	}
	for _, h := range []string{"Content-Type", "X-App-Id", "X-Timestamp", "X-Signature"} {
		req.Header.Set(h, captured.Header.Get(h))
	}
	return a.P.Send(req)
}

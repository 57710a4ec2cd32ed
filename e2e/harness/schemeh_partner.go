package harness

import (
	"time"
)

// DoH sends a scheme H request with a fresh nonce, signed now.
func (a *App) DoH(method, uri string, body any) Response {
	a.P.T.Helper()
	return a.P.Send(a.RequestH(method, uri, Encode(a.P.T, body), FreshNonce(), time.Now()))
}

package idempotency

import (
	"bytes"
	"net/http"

	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// recorder holds a keyed request's answer until it is recorded, so that a
// client never sees an answer a retry could not get again.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

// recorderFor is a recorder that carries w's request id, so that the
// handler behind it records the request's id with its events.
func recorderFor(w http.ResponseWriter) *recorder {
	rw := newRecorder()
	if id := w.Header().Get(httpapi.RequestIDHeader); id != "" {
		rw.header.Set(httpapi.RequestIDHeader, id)
	}
	return rw
}

func (rw *recorder) Header() http.Header { return rw.header }

func (rw *recorder) WriteHeader(status int) {
	if rw.status == 0 {
		rw.status = status
	}
}

func (rw *recorder) Write(b []byte) (int, error) {
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	return rw.body.Write(b)
}

// flush sends the held answer to the client.
func (rw *recorder) flush(w http.ResponseWriter, r *http.Request) {
	for k, v := range rw.header {
		w.Header()[k] = v
	}
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	noteCode(r, rw.status, rw.body.Bytes())
	w.WriteHeader(rw.status)
	_, _ = w.Write(rw.body.Bytes())
}

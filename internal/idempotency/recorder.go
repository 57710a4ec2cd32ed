package idempotency

import (
	"bytes"
	"net/http"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// recorder holds a keyed request's answer until it is recorded, so that a
// client never sees an answer a retry could not get again.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	// about is the channel user the handler said its answer is about
	// (AnswerAbout); "" when it said nothing.
	about string
}

// AnswerAbout tells the recorder of a keyed or signed write (w, as the
// handler was given it) that a success answer it writes is about channel
// user openUserID, so that the answer is sealed with that user's data key
// without being parsed for the user (answerSubject). On any other writer
// it does nothing. An error answer is judged by answerSubject still.
func AnswerAbout(w http.ResponseWriter, openUserID int64) {
	if rw, ok := w.(*recorder); ok && openUserID > 0 {
		rw.about = domain.UserStream(openUserID)
	}
}

// subject is the channel user an answer with status is about: the one the
// handler named for a success, else answerSubject's.
func (rw *recorder) subject(r *http.Request, body []byte, status int, answer []byte) string {
	if rw.about != "" && status < http.StatusMultipleChoices {
		return rw.about
	}
	return answerSubject(r, body, answer)
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
	if outer, ok := w.(*recorder); ok {
		outer.about = rw.about // a keyed write inside a signed one
	}
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	noteCode(r, rw.status, rw.body.Bytes())
	w.WriteHeader(rw.status)
	_, _ = w.Write(rw.body.Bytes())
}

package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"
)

// RequestIDHeader carries the request id on every response.
const RequestIDHeader = "X-Request-Id"

// Limits of the edge, chosen so that a hostile request costs bounded work.
const (
	// MaxRequestLine bounds method + URI + protocol, so that neither the
	// access log nor anything after it ever handles a megabyte string.
	MaxRequestLine = 8 << 10
	// MaxDrain bounds how many request-body bytes are read and discarded
	// before an early answer (413, 401, ...), so that a client that sends
	// its whole body before reading still reads the answer instead of a
	// connection reset.
	MaxDrain = 16 << 20
	// DrainTimeout bounds the time spent discarding such a body.
	DrainTimeout = 10 * time.Second
)

var safeRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Note collects what the access log line says about a request besides its
// status: the calling app, the error code, and why authentication failed.
// Instrument puts one in the request context; authentication and the
// envelope writers fill it in; the reason never reaches the response.
type Note struct {
	AppID  int64
	Code   string
	Reason string
}

type noteKey struct{}

// NoteFrom returns the request's Note; outside Instrument it returns a
// throwaway one, so callers never need to check.
func NoteFrom(ctx context.Context) *Note {
	switch v := ctx.Value(noteKey{}).(type) {
	case *Note:
		return v
	case *requestScope:
		return &v.note
	}
	return &Note{}
}

// requestScope is what Instrument puts in a request's context, under
// noteKey, in one value: the request's Note and its logger, which carries
// the request id and is built only when something logs besides the access
// line (most requests log nothing else, and building it was ≈ 5 µs of a
// snapshot read).
type requestScope struct {
	note Note
	base *slog.Logger
	id   string
	once sync.Once
	l    *slog.Logger
}

// logger returns the request's logger, carrying its id.
func (s *requestScope) logger() *slog.Logger {
	s.once.Do(func() { s.l = s.base.With("request_id", s.id) })
	return s.l
}

// WithNote stores a Note in ctx (Instrument does; tests may).
func WithNote(ctx context.Context, n *Note) context.Context {
	return context.WithValue(ctx, noteKey{}, n)
}

// standardMethods are the only method label values besides "OTHER", so
// that metric series and log fields stay bounded whatever clients send.
var standardMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
	http.MethodConnect: true, http.MethodTrace: true,
}

// MethodLabel maps a request method to a bounded label: itself when it is
// one of the standard methods, otherwise "OTHER".
func MethodLabel(m string) string {
	if standardMethods[m] {
		return m
	}
	return "OTHER"
}

// bodyTracker remembers how much of the request body was read and whether
// its end was seen, so the response writer knows what is left unread.
type bodyTracker struct {
	io.ReadCloser
	n   int64
	eof bool
}

func (b *bodyTracker) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if errors.Is(err, io.EOF) {
		b.eof = true
	}
	return n, err
}

// instrumented is what InstrumentRoute keeps for one request, made in one
// allocation.
type instrumented struct {
	scope  requestScope
	writer statusWriter
	body   bodyTracker
}

type statusWriter struct {
	http.ResponseWriter
	status int
	req    *http.Request
	body   *bodyTracker
	note   *Note
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		w.drain(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// noteCode records the error code of the envelope being written.
func (w *statusWriter) noteCode(code string) { w.note.Code = code }

// drain discards what is left of the request body, within MaxDrain and
// DrainTimeout, before the response header goes out. Go's server reads at
// most 256 KiB of an unread body and then closes the connection with data
// still unread, which the kernel turns into a reset that destroys the
// answer at a client that writes its whole body before reading.
func (w *statusWriter) drain(code int) {
	if code == http.StatusRequestEntityTooLarge {
		w.Header().Set("Connection", "close")
	}
	b := w.body
	if b == nil || b.eof {
		return
	}
	if w.req.ContentLength > MaxDrain || b.n >= MaxDrain ||
		(b.n == 0 && strings.EqualFold(w.req.Header.Get("Expect"), "100-continue")) {
		// Too big to wait for, or the client waits for 100 Continue and
		// has sent nothing: close instead.
		w.Header().Set("Connection", "close")
		return
	}
	_ = http.NewResponseController(w.ResponseWriter).SetReadDeadline(time.Now().Add(DrainTimeout))
	_, _ = io.CopyN(io.Discard, b, MaxDrain-b.n)
	if !b.eof {
		w.Header().Set("Connection", "close")
	}
}

// Observer receives one observation per request, for metrics; method is
// already bounded by MethodLabel.
type Observer func(method, route string, status int, d time.Duration)

// Instrument gives each request an id (the caller's if it is sane), a logger
// carrying it, a Note, panic recovery, an access log line and a metrics
// observation; it drains unread bodies before early answers.
func Instrument(log *slog.Logger, route string, observe Observer, next http.Handler) http.Handler {
	return InstrumentTo(log, log, route, observe, next)
}

// InstrumentTo is Instrument with the access line written to access instead
// of log, so that an operator may buffer the access lines (LineBuffer) while
// what handlers log, errors and panics included, is still written at once.
func InstrumentTo(log, access *slog.Logger, route string, observe Observer, next http.Handler) http.Handler {
	h := InstrumentRoute(log, access, route, observe, func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) { next.ServeHTTP(w, r) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(w, r, nil) })
}

// InstrumentRoute is InstrumentTo for a router's handle: the route's
// parameters reach next as the router passed them, not through the
// request's context, which would cost every request one more context and
// one more copy of the request (httprouter's Handler adapter).
func InstrumentRoute(log, access *slog.Logger, route string, observe Observer, next httprouter.Handle) httprouter.Handle {
	fast, _ := access.Handler().(*LogHandler)
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		start := time.Now()
		id := r.Header.Get(RequestIDHeader)
		if !safeRequestID.MatchString(id) {
			var b [12]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set(RequestIDHeader, id)
		in := &instrumented{scope: requestScope{base: log, id: id}}
		scope, note := &in.scope, &in.scope.note
		sw := &in.writer
		*sw = statusWriter{ResponseWriter: w, req: r, note: note}
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			in.body = bodyTracker{ReadCloser: r.Body}
			sw.body = &in.body
			r.Body = sw.body
		}
		method := MethodLabel(r.Method)
		ctx, span := startServerSpan(r, method, route)
		defer func() {
			if p := recover(); p != nil {
				// A panic value may be built from the request (personal data):
				// log its type, the runtime's own message, and the stack.
				attrs := []any{"panic_type", fmt.Sprintf("%T", p), "stack", string(debug.Stack())}
				if re, ok := p.(runtime.Error); ok {
					attrs = append(attrs, "panic", re.Error())
				}
				scope.logger().Error("panic", attrs...)
				if sw.status == 0 {
					Fail(sw, http.StatusInternalServerError, "HTTP_500", "internal error; the request id identifies it in our logs")
				}
			}
			d := time.Since(start)
			// The same line as the request's logger's Info would write (its
			// request_id first), from typed attributes.
			var buf [8]slog.Attr
			attrs := append(buf[:0], slog.String("request_id", id), slog.String("method", method), slog.String("route", route),
				slog.Int("status", sw.status), slog.Float64("duration_ms", float64(d.Microseconds())/1000))
			if note.AppID != 0 {
				attrs = append(attrs, slog.Int64("app_id", note.AppID))
			}
			if note.Code != "" {
				attrs = append(attrs, slog.String("code", note.Code))
			}
			if note.Reason != "" {
				attrs = append(attrs, slog.String("auth_failure", note.Reason))
			}
			// A LogHandler writes the line without the Record and the
			// caller's program counter that Logger.LogAttrs builds.
			if ok, _ := fast.writeIf(slog.LevelInfo, "request", attrs); !ok {
				access.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs...)
			}
			if observe != nil {
				observe(method, route, sw.status, d)
			}
			endServerSpan(span, sw.status, id, note)
		}()
		next(sw, r.WithContext(context.WithValue(ctx, noteKey{}, scope)), ps)
	}
}

// RequestLineTooLong reports whether the request line would exceed
// MaxRequestLine; such requests are refused before anything logs them.
func RequestLineTooLong(r *http.Request) bool {
	uri := r.RequestURI
	if uri == "" {
		uri = r.URL.RequestURI()
	}
	return len(r.Method)+len(uri)+len(r.Proto)+2 > MaxRequestLine
}

// LimitRequestLine sends requests whose request line exceeds
// MaxRequestLine to refuse (which should answer ErrURITooLong) and the
// rest to next, so no handler or log ever sees a megabyte method or URI.
func LimitRequestLine(next, refuse http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if RequestLineTooLong(r) {
			refuse.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

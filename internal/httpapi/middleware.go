package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"time"
)

// RequestIDHeader carries the request id on every response.
const RequestIDHeader = "X-Request-Id"

var safeRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Observer receives one observation per request, for metrics.
type Observer func(method, route string, status int, d time.Duration)

// Instrument gives each request an id (the caller's if it is sane), a logger
// carrying it, panic recovery, an access log line and a metrics observation.
func Instrument(log *slog.Logger, route string, observe Observer, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get(RequestIDHeader)
		if !safeRequestID.MatchString(id) {
			var b [12]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set(RequestIDHeader, id)
		l := log.With("request_id", id)
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				l.Error("panic", "panic", p)
				if sw.status == 0 {
					Fail(sw, http.StatusInternalServerError, "HTTP_500", "internal error; the request id identifies it in our logs")
				}
			}
			d := time.Since(start)
			l.Info("request", "method", r.Method, "route", route, "status", sw.status, "duration_ms", float64(d.Microseconds())/1000)
			if observe != nil {
				observe(r.Method, route, sw.status, d)
			}
		}()
		next.ServeHTTP(sw, r.WithContext(WithLogger(r.Context(), l)))
	})
}

// StatusLabel turns a status into a metrics label.
func StatusLabel(s int) string { return strconv.Itoa(s) }

package esdb

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
)

// clientLog routes the official client's log lines to slog and remembers
// the latest warning or error, which is often the only place the real cause
// of a failed discovery appears (e.g. "connection refused" or a TLS error).
type clientLog struct {
	log *slog.Logger

	mu   sync.Mutex
	last string
}

// logging is the client's LoggingFunc. A cancelled call is routine (every
// closed subscription ends that way), so lines about one drop to debug.
func (l *clientLog) logging() esdb.LoggingFunc {
	return func(level esdb.LogLevel, format string, args ...interface{}) {
		msg := fmt.Sprintf(format, args...)
		lvl := clientLevel(level, msg)
		if lvl >= slog.LevelWarn {
			l.mu.Lock()
			l.last = msg
			l.mu.Unlock()
		}
		l.log.Log(context.Background(), lvl, "EventStoreDB client: "+msg, "component", "events/esdb")
	}
}

// clientLevel maps the client's levels onto slog's. Its "info" lines are
// per-attempt discovery chatter (the adapter logs when the server goes away
// and comes back), so they go to debug; its "error" lines include every
// failed call, which the caller also sees, so they go to warn.
func clientLevel(level esdb.LogLevel, msg string) slog.Level {
	if strings.Contains(msg, "context canceled") || strings.Contains(msg, "Canceled") {
		return slog.LevelDebug
	}
	switch level {
	case esdb.LogError, esdb.LogWarn:
		return slog.LevelWarn
	default:
		return slog.LevelDebug
	}
}

// lastProblem is the latest warning or error the client logged, or "".
func (l *clientLog) lastProblem() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

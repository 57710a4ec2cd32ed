package tracing_test

import (
	"io"
	"log/slog"
	"os"
)

func getenv(k string) string { return os.Getenv(k) }

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

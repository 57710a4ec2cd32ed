// Command platform runs the partner open platform. With no configuration it
// runs embedded (a durable log and in-memory read models in ./data); the
// PLATFORM_* variables switch each port to its production adapter.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/tracing"
)

func main() {
	cfg, err := loadConfig(os.Args[1:], os.Getenv, os.Stderr)
	if errors.Is(err, errHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "platform: configuration: %v\n", err)
		os.Exit(2)
	}

	log := newLogger(cfg.LogFormat, os.Stderr)
	slog.SetDefault(log)
	cfg.log(log)
	if percent, applied := setDefaultGC(os.Getenv); applied {
		log.Info("garbage collector target set (GOGC and GOMEMLIMIT unset)", "GOGC", percent)
	}
	// The access lines go through a buffer written at least every
	// AccessLogFlush (and at exit); every other line is written at once.
	access, lines := newAccessLogger(cfg.LogFormat, os.Stderr), (*httpapi.LineBuffer)(nil)
	if cfg.AccessLogFlush > 0 {
		lines = httpapi.NewLineBuffer(os.Stderr, cfg.AccessLogFlush)
		access = newAccessLogger(cfg.LogFormat, lines)
	}

	// Tracing is off unless the OTEL_* variables ask for it (checked by
	// loadConfig); its last spans are exported at exit, within a bound.
	traces, err := tracing.FromEnv(context.Background(), os.Getenv, buildVersion())
	if err != nil {
		fmt.Fprintf(os.Stderr, "platform: configuration: %v\n", err)
		os.Exit(2)
	}
	if traces != nil {
		log.Info("tracing on", "exporter", string(traces.Exporter), "protocol", traces.Protocol)
	}

	cfg.Logger, cfg.AccessLog = log, access
	err = run(log, cfg.Addr, cfg.DebugAddr, cfg.Config)
	if terr := traces.Shutdown(context.Background()); terr != nil {
		log.Warn("exporting the last spans", "err", terr)
	}
	if lines != nil {
		_ = lines.Close()
	}
	if err != nil {
		log.Error("platform stopped", "err", err)
		os.Exit(1)
	}
}

// buildVersion is the module version the binary was built from ("" for a
// development build), the service.version of its spans.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return ""
}

// newLogger is the process's logger in format (text or json) on w.
func newLogger(format string, w io.Writer) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// newAccessLogger is newLogger for the access lines: the same bytes
// through httpapi's LogHandler, which Instrument writes to without slog's
// per-record cost.
func newAccessLogger(format string, w io.Writer) *slog.Logger {
	if format == "json" {
		return slog.New(httpapi.NewJSONLogHandler(w))
	}
	return slog.New(httpapi.NewTextLogHandler(w))
}

func run(log *slog.Logger, addr, debugAddr string, cfg node.Config) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if debugAddr != "" {
		stopDebug, err := serveDebug(log, debugAddr)
		if err != nil {
			return fmt.Errorf("debug listener: %w", err)
		}
		defer stopDebug()
	}
	stopRunProfile := runProfile(log)
	defer stopRunProfile()
	stopProfile := startupProfile(log)
	n, err := node.Open(ctx, cfg)
	if err != nil {
		stopProfile()
		return err
	}
	defer n.Close()
	go func() {
		if err := n.WaitCaughtUp(ctx); err == nil {
			log.Info("caught up with the log as it was at start")
		}
		stopProfile()
	}()
	srv := &http.Server{
		Addr: addr, Handler: n.Handler,
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second,
		MaxHeaderBytes: 64 << 10,
	}
	srv.RegisterOnShutdown(n.Drain) // waiting feed requests answer at once
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("platform listening", "addr", fmt.Sprintf("http://%s", addr), "data_dir", cfg.DataDir)
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	case <-ctx.Done():
	}
	log.Info("shutting down")
	writeHeapProfile(log)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}

// startupProfile writes a CPU profile of the start, from here until the
// returned stop is called (once the node has caught up), to the file named
// by PLATFORM_STARTUP_CPUPROFILE: start-up is what operators wait for
// after a deploy, and this shows where it goes. Unset: nothing.
func startupProfile(log *slog.Logger) (stop func()) {
	path := os.Getenv("PLATFORM_STARTUP_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		log.Error("start-up CPU profile not written", "path", path, "err", err)
		return func() {}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			_ = f.Close()
			log.Info("start-up CPU profile written", "path", path)
		})
	}
}

// runProfile writes a CPU profile of the whole run, from here until the
// platform stops (gracefully), to the file named by PLATFORM_CPUPROFILE:
// load benchmarks (scripts/bench.sh BENCH_CPUPROFILE_DIR) drive the
// platform from another process, and this shows where the server's own
// CPU goes per request. Unset: nothing.
func runProfile(log *slog.Logger) (stop func()) {
	path := os.Getenv("PLATFORM_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		log.Error("CPU profile not written", "path", path, "err", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
		log.Info("CPU profile written", "path", path)
	}
}

// writeHeapProfile writes the live heap (after a collection) to the file
// named by PLATFORM_HEAPPROFILE when the platform stops gracefully, with
// its read models still loaded: it shows what the resident memory per user
// and per delivery is made of. Unset: nothing.
func writeHeapProfile(log *slog.Logger) {
	path := os.Getenv("PLATFORM_HEAPPROFILE")
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err == nil {
		runtime.GC()
		err = pprof.WriteHeapProfile(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		log.Error("heap profile not written", "path", path, "err", err)
		return
	}
	log.Info("heap profile written", "path", path)
}

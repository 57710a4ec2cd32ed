package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"runtime"
	"time"
)

// Sampling of the blocking and lock-contention profiles while the debug
// listener is on: a blocking event of 10 µs or more is recorded (shorter
// ones in proportion), and one contended unlock in 100. Both cost a little
// on every blocking operation, so they stay off without the listener.
const (
	debugBlockRate     = 10_000 // nanoseconds
	debugMutexFraction = 100
)

// serveDebug serves Go's runtime profiles (net/http/pprof) on addr, a
// loopback address (loadConfig refuses others: the profiles carry no
// authentication), until stop is called. A CPU profile or execution trace
// is taken while its request waits (?seconds=N), so a live node is
// profiled without a restart: what a slow request waited on, where CPU
// goes under a partner's load, what holds memory. The partner and admin
// listener never serves these paths.
func serveDebug(log *slog.Logger, addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	runtime.SetBlockProfileRate(debugBlockRate)
	runtime.SetMutexProfileFraction(debugMutexFraction)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", httppprof.Index) // the named profiles: heap, goroutine, block, mutex, allocs, threadcreate
	mux.HandleFunc("/debug/pprof/cmdline", httppprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", httppprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", httppprof.Trace)
	// No write timeout: a profile's request lasts its ?seconds.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("debug listener stopped", "err", err)
		}
	}()
	log.Info("debug listener serving runtime profiles", "addr", "http://"+ln.Addr().String()+"/debug/pprof/")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		runtime.SetBlockProfileRate(0)
		runtime.SetMutexProfileFraction(0)
	}, nil
}

package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"
)

// servePprof serves the runtime profiles on addr until ctx ends. It is
// opt-in (GATEHOUSE_PPROF=127.0.0.1:6060) and belongs on loopback: the
// profiles show the server's internals.
func servePprof(ctx context.Context, addr string, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	log.Warn("pprof listening (GATEHOUSE_PPROF)", "addr", "http://"+addr+"/debug/pprof/")
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		log.Error("pprof listener stopped", "err", err)
	}
}

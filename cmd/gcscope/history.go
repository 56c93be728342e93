package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/history"
)

// historyStopTimeout bounds how long shutdown waits for the recording's last write.
const historyStopTimeout = 5 * time.Second

// startHistory opens the recording and records the engine's feed into it until stop is
// called. The directory is --history-dir, else <dataDir>/history (the embedded cluster's
// data dir, or --data-dir), else a temporary one removed by stop; with several contexts,
// each context's is sub (its name as pathSegment writes it) in that directory, made
// caseSafe.
func startHistory(cfg *config, dataDir, sub string, engine *gc.GarbageCollector, log *slog.Logger, stdout io.Writer) (_ *history.Store, stop func(), err error) {
	dir, cleanup := cfg.historyDir, func() {}
	switch seg := caseSafe(sub); {
	case dir != "":
		dir = filepath.Join(dir, seg)
	case dataDir != "":
		dir = filepath.Join(dataDir, "history", seg)
	default:
		if dir, err = os.MkdirTemp("", "gcscope-history-"); err != nil {
			return nil, nil, err
		}
		cleanup = func() { os.RemoveAll(dir) }
	}
	store, err := history.Open(history.Options{Dir: dir, MaxSize: cfg.historyMaxSize, MaxAge: cfg.historyMaxAge, Logger: log.With("component", "history")})
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("%v; check --history-dir, or move the directory away to start a new recording", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- history.NewRecorder(store, engine, history.RecorderOptions{Version: version}).Run(ctx) }()
	kept := "kept across restarts"
	if cfg.historyDir == "" && cfg.dataDir == "" {
		kept = "removed on exit: --data-dir or --history-dir keeps it"
	}
	age := "no age limit"
	if cfg.historyMaxAge > 0 {
		age = "for " + cfg.historyMaxAge.String()
	}
	what := "the engine's history"
	if sub != "" {
		what = "the history of context " + sub + "'s engine"
	}
	fmt.Fprintf(stdout, "recording %s in %s (%s; at most %s, %s)\n", what, dir, kept, resourceText(cfg.historyMaxSize), age)
	return store, func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				log.Warn("history recorder", "err", err)
			}
		case <-time.After(historyStopTimeout):
			log.Warn("history recorder still writing; not waiting longer")
		}
		store.Close()
		cleanup()
	}, nil
}

// caseSafe keeps a context's directory its own on a file system that ignores case (macOS's
// by default), where "Prod" and "prod" would name one directory and two engines would
// write one recording. seg is the name as pathSegment writes it: letters, digits, a few
// marks and %XX escapes (upper-case hex), never a comma. A name with an upper-case letter
// (outside the escapes) gets a comma and 8 hex digits of the SHA-256 of its exact
// spelling; a name with none keeps its directory, so that no earlier recording moves.
// Two names that differ only in case thus never share a directory, and a name with a
// suffix never matches one without (which has no comma).
func caseSafe(seg string) string {
	for i := 0; i < len(seg); i++ {
		switch c := seg[i]; {
		case c == '%':
			i += 2 // an escape's hex digits are pathSegment's, not the name's
		case 'A' <= c && c <= 'Z':
			sum := sha256.Sum256([]byte(seg))
			return seg + "," + hex.EncodeToString(sum[:4])
		}
	}
	return seg
}

// resourceText says a byte count the way --history-max-size takes it.
func resourceText(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.suffix)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

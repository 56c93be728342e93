package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/gcscope/gcscope/history"
	"github.com/gcscope/gcscope/server"
)

// replayConfig is the command line of `gcscope replay FILE`.
type replayConfig struct {
	serveFlags // --read-only is accepted and always on
	file       string
}

func parseReplayFlags(args []string, stderr io.Writer) (*replayConfig, error) {
	c := &replayConfig{}
	fs := flag.NewFlagSet("gcscope replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: gcscope replay [flags] FILE\n\n"+
			"Serves a history exported from gcscope (GET /api/v1/history/export) read-only:\n"+
			"the page and the history API, with no cluster and no engine.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	c.serveFlags.register(fs, replayWords)
	// Flags may come before FILE or after it (gcscope replay FILE --listen ...).
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err}
		}
		if fs.NArg() == 0 {
			break
		}
		files, args = append(files, fs.Arg(0)), fs.Args()[1:]
	}
	if len(files) != 1 {
		return nil, usageError{fmt.Errorf("gcscope replay takes one FILE, a history exported from gcscope (GET /api/v1/history/export); given %d", len(files))}
	}
	c.file = files[0]
	if err := c.serveFlags.parse(); err != nil {
		return nil, usageError{err}
	}
	// The same rules as gcscope's: a recording names a cluster's objects.
	if err := c.serveFlags.check(c.authTokenFile != ""); err != nil {
		return nil, usageError{err}
	}
	return c, nil
}

// runReplay imports FILE into a temporary recording and serves it read-only, with no
// cluster and no engine, until ctx ends.
func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseReplayFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	log := cfg.logger(stderr)
	tokens, err := cfg.authenticator()
	if err != nil {
		return err
	}
	f, err := os.Open(cfg.file)
	if err != nil {
		return err
	}
	defer f.Close()
	dir, err := os.MkdirTemp("", "gcscope-replay-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store, err := history.Open(history.Options{Dir: dir, Logger: log.With("component", "history")})
	if err != nil {
		return err
	}
	defer store.Close()
	start := time.Now()
	sum, err := history.Import(ctx, store, f)
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.file, err)
	}

	ln, scheme, err := cfg.listener()
	if err != nil {
		return err
	}
	defer ln.Close()
	opts := cfg.options(log, tokens, stderr)
	opts.ReadOnly, opts.Replay, opts.History = true, true, store // read-only whatever --read-only says
	// What the file covers, said once the replay serves.
	report := func() error {
		span := "no events"
		if sum.Events > 0 {
			span = fmt.Sprintf("%s to %s, %s", sum.First.UTC().Format(time.RFC3339Nano), sum.Last.UTC().Format(time.RFC3339Nano), plural(sum.Events, "event"))
		}
		fmt.Fprintf(stdout, "replaying %s (exported by gcscope %s at %s): %s, %s, %s (imported in %s)\n",
			cfg.file, printable(sum.Header.Version), sum.Header.ExportedAt.Format(time.RFC3339), span, plural(sum.Cascades, "cascade"), plural(sum.Gaps, "gap"),
			time.Since(start).Round(time.Millisecond))
		return nil
	}
	return serve(ctx, stdout, serving{ln: ln, scheme: scheme, handler: server.New(opts),
		what: "the replay (read-only, no cluster, no engine)", started: report})
}

// printable is what a file says, fit for a terminal: no control characters (a crafted
// file's escape sequences could rewrite the screen), at most 64 characters.
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return '?'
	}, s)
	if r := []rune(s); len(r) > 64 {
		s = string(r[:64]) + "…"
	}
	return s
}

// plural is "1 cascade", "2 cascades".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

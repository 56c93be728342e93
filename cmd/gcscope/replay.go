package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/gcscope/gcscope/history"
	"github.com/gcscope/gcscope/server"
)

// replayConfig is the command line of `gcscope replay FILE`.
type replayConfig struct {
	file           string
	listen         string
	authTokenFile  string
	allowedOrigins []string
	allowedHosts   []string
	tlsCert        string
	tlsKey         string
	insecureHTTP   bool
	logLevel       slog.Level
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
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8080", "address to serve the UI and API on (not loopback: requires --auth-token-file)")
	fs.StringVar(&c.authTokenFile, "auth-token-file", "", "require a bearer token from this file (one per line: token [name])")
	origins := fs.String("allowed-origins", "", "comma-separated extra origins allowed for the websocket and writes: https://gcscope.example.com, or a host pattern (*.example.com) matched over https")
	hosts := fs.String("allowed-hosts", "", "comma-separated extra Host names to answer to; besides localhost, loopback addresses and the --listen address, every other Host is refused (DNS rebinding)")
	fs.StringVar(&c.tlsCert, "tls-cert-file", "", "serve https with this certificate (PEM; with --tls-private-key-file)")
	fs.StringVar(&c.tlsKey, "tls-private-key-file", "", "the private key of --tls-cert-file (PEM)")
	fs.BoolVar(&c.insecureHTTP, "insecure-allow-http", false, "allow plain http on a non-loopback --listen address (only behind a TLS-terminating proxy)")
	fs.Bool("read-only", true, "always on: a replay refuses every write (accepted for symmetry with gcscope)")
	level := fs.String("log-level", "info", "log level: debug, info, warn or error")
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
	if err := c.logLevel.UnmarshalText([]byte(*level)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", *level)}
	}
	c.allowedOrigins, c.allowedHosts = commaList(*origins), commaList(*hosts)
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return nil, usageError{errors.New("--tls-cert-file and --tls-private-key-file go together: give both or neither")}
	}
	// The same rules as gcscope's: a recording names a cluster's objects.
	loopback, err := isLoopback(c.listen)
	if err != nil {
		return nil, usageError{err}
	}
	if !loopback && c.authTokenFile == "" {
		return nil, usageError{fmt.Errorf("--listen %q is not a loopback address: a recording shows a cluster's objects, so it needs authentication to listen there; add --auth-token-file FILE", c.listen)}
	}
	if !loopback && c.tlsCert == "" && !c.insecureHTTP {
		return nil, usageError{fmt.Errorf("--listen %q is not a loopback address: tokens and session cookies must not cross the network in clear; add --tls-cert-file and --tls-private-key-file, or --insecure-allow-http behind a TLS-terminating proxy", c.listen)}
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
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel}))
	var tokens *server.TokenFile
	if cfg.authTokenFile != "" {
		if tokens, err = server.LoadTokenFile(cfg.authTokenFile); err != nil {
			return fmt.Errorf("--auth-token-file: %v", err)
		}
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

	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%s is already in use; stop whatever listens there or pick another address with --listen", cfg.listen)
		}
		return fmt.Errorf("listen on %s: %w", cfg.listen, err)
	}
	defer ln.Close()
	scheme := "http"
	if cfg.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.tlsCert, cfg.tlsKey)
		if err != nil {
			return fmt.Errorf("--tls-cert-file/--tls-private-key-file: %v", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		scheme = "https"
	}
	var auth server.Authenticator
	if tokens != nil {
		auth = tokens
	}
	handler := server.New(server.Options{
		Logger: log, Version: version, ReadOnly: true, Replay: true, History: store,
		Auth: auth, AllowedOrigins: cfg.allowedOrigins, AllowedHosts: cfg.allowedHosts, Listen: cfg.listen, Audit: stderr,
	})
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()

	span := "no events"
	if sum.Events > 0 {
		span = fmt.Sprintf("%s to %s, %s", sum.First.UTC().Format(time.RFC3339Nano), sum.Last.UTC().Format(time.RFC3339Nano), plural(sum.Events, "event"))
	}
	fmt.Fprintf(stdout, "replaying %s (exported by gcscope %s at %s): %s, %s, %s (imported in %s)\n",
		cfg.file, printable(sum.Header.Version), sum.Header.ExportedAt.Format(time.RFC3339), span, plural(sum.Cascades, "cascade"), plural(sum.Gaps, "gap"),
		time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(stdout, "gcscope %s serving the replay (read-only, no cluster, no engine) on %s://%s\n", version, scheme, ln.Addr())
	select {
	case <-ctx.Done():
		return nil
	case err := <-serveErr:
		return fmt.Errorf("http server: %w", err)
	}
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

package main

// What gcscope and gcscope replay share: the flags that say where and how they serve (the
// address, TLS, the token file, the Hosts and Origins they answer, --read-only, the log
// level), the rules a listening address must follow, and the serve loop.

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
	"strings"
	"syscall"
	"time"

	"github.com/gcscope/gcscope/server"
	"github.com/gcscope/gcscope/server/security"
)

// serveFlags are the serving flags of gcscope and gcscope replay.
type serveFlags struct {
	listen         string
	authTokenFile  string
	allowedOrigins []string
	allowedHosts   []string
	tlsCert        string
	tlsKey         string
	insecureHTTP   bool
	readOnly       bool
	logLevel       slog.Level

	words                 serveWords
	level, origins, hosts string // as given, until parse
}

// serveWords is what the two commands say differently of the flags they share: gcscope
// deletes objects and may authenticate through the cluster; a replay only shows a
// recording, and is read-only whatever --read-only says.
type serveWords struct {
	listen, allowedHosts, insecureHTTP, logLevel string
	readOnly                                     string
	readOnlyDefault                              bool
	// unauthenticated is why a non-loopback --listen needs authentication, and how to add it.
	unauthenticated string
}

var (
	gcscopeWords = serveWords{
		listen:          "address to serve the UI and API on (not loopback: requires --auth-token-file or --auth=kubernetes)",
		allowedHosts:    "comma-separated extra Host names to answer to (e.g. gcscope.example.com, *.example.com); besides localhost, loopback addresses and the --listen address, every other Host is refused (DNS rebinding)",
		insecureHTTP:    "allow plain http on a non-loopback --listen address (tokens and cookies then cross the network in clear; only behind a TLS-terminating proxy)",
		logLevel:        "log level: debug, info, warn or error (debug also shows the control plane's logs)",
		readOnly:        "refuse every write from the UI and API (the engine keeps collecting)",
		unauthenticated: "gcscope can delete objects, so it needs authentication to listen there; add --auth-token-file FILE or --auth=kubernetes",
	}
	replayWords = serveWords{
		listen:          "address to serve the UI and API on (not loopback: requires --auth-token-file)",
		allowedHosts:    "comma-separated extra Host names to answer to; besides localhost, loopback addresses and the --listen address, every other Host is refused (DNS rebinding)",
		insecureHTTP:    "allow plain http on a non-loopback --listen address (only behind a TLS-terminating proxy)",
		logLevel:        "log level: debug, info, warn or error",
		readOnly:        "always on: a replay refuses every write (accepted for symmetry with gcscope)",
		readOnlyDefault: true,
		unauthenticated: "a recording shows a cluster's objects, so it needs authentication to listen there; add --auth-token-file FILE",
	}
)

// register adds the serving flags to fs, described in words.
func (s *serveFlags) register(fs *flag.FlagSet, words serveWords) {
	s.words = words
	fs.StringVar(&s.listen, "listen", "127.0.0.1:8080", words.listen)
	fs.StringVar(&s.authTokenFile, "auth-token-file", "", "require a bearer token from this file (one per line: token [name])")
	fs.StringVar(&s.origins, "allowed-origins", "", "comma-separated extra origins allowed for the websocket and writes: https://gcscope.example.com, or a host pattern (*.example.com) matched over https")
	fs.StringVar(&s.hosts, "allowed-hosts", "", words.allowedHosts)
	fs.StringVar(&s.tlsCert, "tls-cert-file", "", "serve https with this certificate (PEM; with --tls-private-key-file)")
	fs.StringVar(&s.tlsKey, "tls-private-key-file", "", "the private key of --tls-cert-file (PEM)")
	fs.BoolVar(&s.insecureHTTP, "insecure-allow-http", false, words.insecureHTTP)
	fs.BoolVar(&s.readOnly, "read-only", words.readOnlyDefault, words.readOnly)
	fs.StringVar(&s.level, "log-level", "info", words.logLevel)
}

// parse reads what the flags give as text: the log level and the lists.
func (s *serveFlags) parse() error {
	if err := s.logLevel.UnmarshalText([]byte(s.level)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", s.level)
	}
	s.allowedOrigins, s.allowedHosts = commaList(s.origins), commaList(s.hosts)
	return nil
}

// check applies the rules of a listening address: a key pair is whole; off loopback, a
// user must authenticate (authenticated: the command line says how) and tokens and
// cookies must not cross the network in clear.
func (s *serveFlags) check(authenticated bool) error {
	if (s.tlsCert == "") != (s.tlsKey == "") {
		return errors.New("--tls-cert-file and --tls-private-key-file go together: give both or neither")
	}
	loopback, err := isLoopback(s.listen)
	if err != nil {
		return err
	}
	if !loopback && !authenticated {
		return fmt.Errorf("--listen %q is not a loopback address: %s", s.listen, s.words.unauthenticated)
	}
	if !loopback && !s.tls() && !s.insecureHTTP {
		return fmt.Errorf("--listen %q is not a loopback address: tokens and session cookies must not cross the network in clear; add --tls-cert-file and --tls-private-key-file, or --insecure-allow-http behind a TLS-terminating proxy", s.listen)
	}
	return nil
}

// tls reports whether the flags serve https.
func (s *serveFlags) tls() bool { return s.tlsCert != "" }

// logger logs to stderr at --log-level.
func (s *serveFlags) logger(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: s.logLevel}))
}

// authenticator reads --auth-token-file; without it, nil: no token is asked for.
func (s *serveFlags) authenticator() (security.Authenticator, error) {
	if s.authTokenFile == "" {
		return nil, nil
	}
	tokens, err := security.LoadTokenFile(s.authTokenFile)
	if err != nil {
		return nil, fmt.Errorf("--auth-token-file: %v", err)
	}
	return tokens, nil
}

// options are the server's options the serving flags decide.
func (s *serveFlags) options(log *slog.Logger, auth security.Authenticator, audit io.Writer) server.Options {
	return server.Options{
		Logger: log, Version: version, ReadOnly: s.readOnly, Auth: auth, Audit: audit,
		Listen: s.listen, AllowedOrigins: s.allowedOrigins, AllowedHosts: s.allowedHosts,
	}
}

// listener listens on --listen, with TLS when the flags give a key pair, and says which
// scheme it serves.
func (s *serveFlags) listener() (net.Listener, string, error) {
	ln, err := net.Listen("tcp", s.listen)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, "", fmt.Errorf("%s is already in use; stop whatever listens there or pick another address with --listen", s.listen)
		}
		return nil, "", fmt.Errorf("listen on %s: %w", s.listen, err)
	}
	if !s.tls() {
		return ln, "http", nil
	}
	cert, err := tls.LoadX509KeyPair(s.tlsCert, s.tlsKey)
	if err != nil {
		ln.Close()
		return nil, "", fmt.Errorf("--tls-cert-file/--tls-private-key-file: %v", err)
	}
	return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), "https", nil
}

// commaList splits a comma-separated flag value, dropping blanks.
func commaList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// isLoopback reports whether addr (host:port) is reachable from this machine only.
func isLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("--listen %q: want host:port, for example 127.0.0.1:8080", addr)
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// serving is what serve serves, and what it does and says on the way.
type serving struct {
	ln      net.Listener
	scheme  string // http or https
	handler http.Handler
	// what is what the line "gcscope VERSION serving … on URL" names ("": gcscope itself).
	what string
	// started does what comes before that line, once the server serves: gcscope's
	// summary, the replay's report of its file. errStopped: ctx ended meanwhile.
	started func() error
	failed  <-chan error // the embedded cluster's failure, or nil
	// log says that gcscope shuts down when ctx ends; nil for the replay, which has
	// nothing to stop that takes time.
	log *slog.Logger
}

// errStopped: gcscope was asked to stop while it started.
var errStopped = errors.New("stopped")

// serve serves s.handler on s.ln until ctx ends, s.failed reports a failure or the server
// fails.
func serve(ctx context.Context, stdout io.Writer, s serving) error {
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(s.ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := s.started(); err != nil {
		if errors.Is(err, errStopped) {
			return nil
		}
		return err
	}
	what := "serving"
	if s.what != "" {
		what += " " + s.what
	}
	fmt.Fprintf(stdout, "gcscope %s %s on %s://%s\n", version, what, s.scheme, s.ln.Addr())
	select {
	case <-ctx.Done():
		if s.log != nil {
			s.log.Info("shutting down")
		}
		return nil
	case err := <-s.failed:
		return err
	case err := <-serveErr:
		return fmt.Errorf("http server: %w", err)
	}
}

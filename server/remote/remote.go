package remote

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gcscope/gcscope/server/registry"
	"github.com/gcscope/gcscope/server/security"
)

// Config is one remote gcscope as the operator names it: --remote NAME=URL[,ca=FILE][,forward=MODE].
type Config struct {
	// Name is the cluster's name at the hub (/api/v1/clusters/NAME/...).
	Name string
	// URL is the remote gcscope's base URL (its /api/v1 is below it): https, or http to a
	// loopback address only (the user's credential must not cross a network in clear).
	URL string
	// CAFile is the PEM bundle that signs the remote's serving certificate; "" is the
	// system's roots.
	CAFile string
	// Forward is which of the user's credentials the remote is given; "" is ForwardToken.
	Forward Forward
}

// ParseSpec reads a --remote value: NAME=URL, then optional ",ca=FILE" and
// ",forward=token|id-token".
func ParseSpec(spec string) (Config, error) {
	name, rest, ok := strings.Cut(spec, "=")
	if !ok || name == "" {
		return Config{}, fmt.Errorf("--remote %q: want NAME=URL[,ca=FILE][,forward=token|id-token]", spec)
	}
	parts := strings.Split(rest, ",")
	c := Config{Name: name, URL: parts[0]}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		switch k {
		case "ca":
			c.CAFile = v
		case "forward":
			c.Forward = Forward(v)
		default:
			return Config{}, fmt.Errorf("--remote %q: unknown option %q (want ca=FILE or forward=token|id-token; a URL cannot hold a comma)", spec, k)
		}
	}
	return c, c.validate()
}

// validate refuses what would send the user's credential somewhere unintended.
func (c Config) validate() error {
	switch c.Name {
	case "", ".", "..":
		return fmt.Errorf("remote %q: not a cluster name (it is one path segment of /api/v1/clusters/NAME)", c.Name)
	}
	if _, err := c.Forward.mode(); err != nil {
		return fmt.Errorf("remote %q: %w", c.Name, err)
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return fmt.Errorf("remote %q: URL %q: %w", c.Name, c.URL, err)
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("remote %q: URL %q: want https:// (or http:// to a loopback address)", c.Name, c.URL)
	case u.Host == "":
		return fmt.Errorf("remote %q: URL %q has no host", c.Name, c.URL)
	case u.User != nil:
		return fmt.Errorf("remote %q: URL %q carries a user: the hub forwards each user's own credential, never one of its own", c.Name, c.URL)
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("remote %q: URL %q: a base URL has no query or fragment", c.Name, c.URL)
	case u.Scheme == "http" && !loopback(u.Hostname()):
		return fmt.Errorf("remote %q: URL %q: http would carry users' credentials in clear; use https (http is for loopback addresses only)", c.Name, c.URL)
	case u.Scheme == "http" && c.CAFile != "":
		return fmt.Errorf("remote %q: a CA file with an http URL: want https", c.Name)
	}
	return nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Limits bound what a remote may cost the hub; the zero value of each field is its default.
type Limits struct {
	// DialTimeout bounds connecting to a remote (TCP and TLS); default 5 s.
	DialTimeout time.Duration
	// ResponseTimeout bounds the wait for a response's headers; default 30 s (the remote's
	// own bound on its reads).
	ResponseTimeout time.Duration
	// MaxResponseBytes bounds one proxied response's body; default 256 MiB.
	MaxResponseBytes int64
	// MaxFrameBytes bounds one stream frame from a remote; default 256 MiB (a snapshot of
	// a large cluster is one frame; the hub relays it piecewise, never whole).
	MaxFrameBytes int64
	// MaxWriteBytes bounds a write's body; default 1 MiB.
	MaxWriteBytes int64
	// ProbeInterval is how often each remote's readiness is asked; default 5 s.
	ProbeInterval time.Duration
	// ProbeTimeout bounds one probe and one check of a user's credential; default 3 s.
	ProbeTimeout time.Duration
	// FrameWriteTimeout is how long a browser may take to accept one relayed frame before
	// its stream is closed; default 30 s.
	FrameWriteTimeout time.Duration
}

func (l Limits) withDefaults() Limits {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defN := func(n *int64, v int64) {
		if *n <= 0 {
			*n = v
		}
	}
	def(&l.DialTimeout, 5*time.Second)
	def(&l.ResponseTimeout, 30*time.Second)
	def(&l.ProbeInterval, 5*time.Second)
	def(&l.ProbeTimeout, 3*time.Second)
	def(&l.FrameWriteTimeout, 30*time.Second)
	defN(&l.MaxResponseBytes, 256<<20)
	defN(&l.MaxFrameBytes, 256<<20)
	defN(&l.MaxWriteBytes, 1<<20)
	return l
}

// Remote is one remote gcscope: where it is, how it is reached, and where it is now.
type Remote struct {
	cfg     Config
	forward Forward
	base    *url.URL
	limits  Limits
	log     *slog.Logger
	// client reaches the remote and nothing else: it follows no redirect.
	client *http.Client
	// origins are the hub's allowed origins (its own are always allowed), for the stream.
	origins []string
	streams chan struct{}           // a token per relayed stream (Options.MaxStreams)
	users   *security.TokenReviewer // its answers about users' credentials (users.go)

	mu     sync.Mutex
	status registry.Status
	kick   chan struct{} // asks the prober for a probe now
}

// newRemote makes the client for c; the CA file is read now, so a wrong one fails at start-up.
func newRemote(c Config, o Options) (*Remote, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	forward, _ := c.Forward.mode()
	base, _ := url.Parse(strings.TrimSuffix(c.URL, "/"))
	l := o.Limits.withDefaults()
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: l.DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   l.DialTimeout,
		ResponseHeaderTimeout: l.ResponseTimeout,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   16,
		ForceAttemptHTTP2:     true,
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("remote %q: its CA: %w", c.Name, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("remote %q: its CA: no PEM certificate in %s", c.Name, c.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rm := &Remote{
		cfg: c, forward: forward, base: base, limits: l, log: log.With("remote", c.Name),
		client: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
			return errRedirect // the user's credential goes to the configured URL only
		}},
		origins: o.AllowedOrigins,
		streams: make(chan struct{}, o.maxStreams()),
		status:  registry.Status{Name: c.Name, Server: base.String(), State: registry.Connecting, Since: time.Now()},
		kick:    make(chan struct{}, 1),
	}
	rm.users = security.NewReviewer(rm.whoIs, nil)
	return rm, nil
}

var errRedirect = errors.New("the remote answered with a redirect, which the hub does not follow")

// Name is the cluster's name at the hub.
func (rm *Remote) Name() string { return rm.cfg.Name }

// URL is the remote gcscope's base URL.
func (rm *Remote) URL() string { return rm.base.String() }

// endpoint is the remote's URL of escaped, a path below its base URL as sent (escaped,
// starting with "/"): /api/v1/graph, /readyz. A "." or ".." segment is refused, as sent
// and as any server or proxy in front of the remote could read it: unescaped once or
// more (%2e%2e, %252e%252e), with escaped slashes (..%2F) and backslashes (..%5C) taken
// as separators. The hub reaches the remote's API, nothing beside it; no path of the API
// holds such a segment or a "%".
func (rm *Remote) endpoint(escaped string) (*url.URL, error) {
	raw := rm.base.EscapedPath() + escaped
	p, err := url.PathUnescape(raw)
	if err != nil {
		return nil, fmt.Errorf("path %q: %w", escaped, err)
	}
	if seg := dotSegment(escaped); seg != "" {
		return nil, fmt.Errorf("path %q: a %q segment", escaped, seg)
	}
	u := *rm.base
	u.Path, u.RawPath = p, raw
	return &u, nil
}

// dotSegment is the first "." or ".." segment of path as sent or as unescaped any number
// of times, splitting at "/" and "\"; "" when there is none.
func dotSegment(path string) string {
	for range 8 { // each round unescapes once more; a path escaped 8 times over is refused below
		for seg := range strings.FieldsFuncSeq(path, func(r rune) bool { return r == '/' || r == '\\' }) {
			if seg == "." || seg == ".." {
				return seg
			}
		}
		next, err := url.PathUnescape(path)
		if err != nil || next == path {
			return ""
		}
		path = next
	}
	return path
}

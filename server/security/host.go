package security

// A DNS-rebinding page reaches gcscope under the attacker's own name (evil.example
// resolving to 127.0.0.1): the browser then treats gcscope as that page's own origin, so
// Origin checks alone pass. Refusing every Host gcscope was not told to answer to closes
// that door before any handler runs.

import (
	"net"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HostPolicy decides which Host headers the server answers.
type HostPolicy struct {
	// listenHost is the host of the --listen address ("" or an unspecified address when
	// it listens on every interface).
	listenHost string
	// patterns are --allowed-hosts entries (path.Match patterns, lower case, no port).
	patterns []string

	mu       sync.Mutex
	local    map[string]bool // this machine's interface addresses, when listening on all
	localAt  time.Time
	localTTL time.Duration
}

// NewHostPolicy answers to listen's host, the patterns of allowed, localhost and loopback
// addresses (and, listening on every interface, this machine's addresses).
func NewHostPolicy(listen string, allowed []string) *HostPolicy {
	p := &HostPolicy{localTTL: 30 * time.Second}
	if h, _, err := net.SplitHostPort(listen); err == nil {
		p.listenHost = normalHost(h)
	} else {
		p.listenHost = normalHost(listen)
	}
	for _, a := range allowed {
		if a = strings.TrimSpace(a); a != "" {
			p.patterns = append(p.patterns, normalHost(stripPort(a)))
		}
	}
	return p
}

// Allowed reports whether gcscope answers requests for hostport (a Host header).
func (p *HostPolicy) Allowed(hostport string) bool {
	h := normalHost(stripPort(hostport))
	if h == "" {
		return false
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	if ip != nil && ip.IsLoopback() {
		return true
	}
	if p.listenHost != "" && h == p.listenHost {
		return true
	}
	for _, pat := range p.patterns {
		if ok, _ := path.Match(pat, h); ok {
			return true
		}
	}
	// Listening on every interface: an address of this machine, written as an address,
	// is how probes and direct clients reach it (a pod's IP, say). An IP literal is no
	// rebinding risk: the page's origin is then that address itself.
	if ip != nil && p.wildcard() {
		return p.isLocal(ip)
	}
	return false
}

func (p *HostPolicy) wildcard() bool {
	if p.listenHost == "" {
		return true
	}
	ip := net.ParseIP(p.listenHost)
	return ip != nil && ip.IsUnspecified()
}

// isLocal reports whether ip is an address of one of this machine's interfaces; the list
// is read again at most every localTTL.
func (p *HostPolicy) isLocal(ip net.IP) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.local == nil || time.Since(p.localAt) > p.localTTL {
		p.local = map[string]bool{}
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok {
					p.local[n.IP.String()] = true
				}
			}
		}
		p.localAt = time.Now()
	}
	return p.local[ip.String()]
}

// stripPort drops a :port, and the brackets of an IPv6 literal. What follows the colon
// must be a port number: "localhost:8080.evil" is not localhost.
func stripPort(hostport string) string {
	if h, port, err := net.SplitHostPort(hostport); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			return hostport
		}
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// normalHost lower-cases a host name and drops the trailing dot of a fully qualified one
// ("localhost." is localhost).
func normalHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

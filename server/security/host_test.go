package security

import (
	"net"
	"testing"
)

// TestHostAllowList: which Host headers gcscope answers to, name by name.
func TestHostAllowList(t *testing.T) {
	for _, tc := range []struct {
		listen  string
		allowed []string
		host    string
		ok      bool
	}{
		{"127.0.0.1:8080", nil, "127.0.0.1:8080", true},
		{"127.0.0.1:8080", nil, "127.0.0.2:9999", true}, // all of 127.0.0.0/8
		{"127.0.0.1:8080", nil, "localhost:8080", true},
		{"127.0.0.1:8080", nil, "LOCALHOST.:8080", true},
		{"127.0.0.1:8080", nil, "[::1]:8080", true},
		{"127.0.0.1:8080", nil, "localhost", true},
		{"127.0.0.1:8080", nil, "evil.example:8080", false},
		{"127.0.0.1:8080", nil, "evil.example", false},
		{"127.0.0.1:8080", nil, "localhost.evil.example:8080", false},
		{"127.0.0.1:8080", nil, "127.0.0.1.nip.io:8080", false},
		{"127.0.0.1:8080", nil, "evil.localhost:8080", false},
		{"127.0.0.1:8080", nil, "localhost:8080.evil", false}, // not a port: not localhost
		{"127.0.0.1:8080", nil, "localhost:", false},
		{"127.0.0.1:8080", nil, "", false},
		{"127.0.0.1:8080", nil, "192.0.2.1:8080", false},
		{"127.0.0.1:8080", []string{"gcscope.example.com"}, "gcscope.example.com:443", true},
		{"127.0.0.1:8080", []string{"gcscope.example.com"}, "GCScope.Example.com", true},
		{"127.0.0.1:8080", []string{"*.example.com"}, "a.example.com", true},
		{"127.0.0.1:8080", []string{"*.example.com"}, "example.com", false},
		{"gcscope.internal:8443", nil, "gcscope.internal:8443", true},
		{"gcscope.internal:8443", nil, "other.internal:8443", false},
		{"192.0.2.7:8443", nil, "192.0.2.7:8443", true},
		{"0.0.0.0:8080", nil, "192.0.2.1:8080", false}, // not an address of this machine
		{"0.0.0.0:8080", nil, "evil.example:8080", false},
	} {
		if got := NewHostPolicy(tc.listen, tc.allowed).Allowed(tc.host); got != tc.ok {
			t.Errorf("listen %s, allowed %v: host %q allowed=%v, want %v", tc.listen, tc.allowed, tc.host, got, tc.ok)
		}
	}
	// Listening on every interface, this machine's own addresses are answered (a pod's
	// IP, for its probes).
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() {
			host := net.JoinHostPort(n.IP.String(), "8080")
			if !NewHostPolicy("0.0.0.0:8080", nil).Allowed(host) || !NewHostPolicy(":8080", nil).Allowed(host) {
				t.Errorf("listening on all interfaces: own address %s refused", host)
			}
			if NewHostPolicy("127.0.0.1:8080", nil).Allowed(host) {
				t.Errorf("listening on loopback: %s answered", host)
			}
		}
	}
}

package edge

import (
	"net/http"

	"github.com/gcscope/gcscope/server/httpapi"
)

// CheckHost refuses, with 421 and an audit line, every request whose Host gcscope does
// not answer to (security.HostPolicy: the DNS-rebinding defence).
func (e *Edge) CheckHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e.opts.Hosts.Allowed(r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		e.audit.Refuse(w, r, "host", http.StatusMisdirectedRequest, httpapi.ErrHostNotAllowed("gcscope does not answer to host "+httpapi.QuoteClip(r.Host)+": it answers to localhost, loopback addresses and its --listen address; add trusted names with --allowed-hosts"))
	})
}

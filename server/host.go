package server

import (
	"net/http"

	"github.com/gcscope/gcscope/server/httpapi"
)

// checkHost refuses, with 421 and an audit line, every request whose Host gcscope does
// not answer to (security.HostPolicy: the DNS-rebinding defence).
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.hosts.Allowed(r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		s.refuse(w, r, "host", http.StatusMisdirectedRequest, httpapi.ErrHostNotAllowed("gcscope does not answer to host "+httpapi.QuoteClip(r.Host)+": it answers to localhost, loopback addresses and its --listen address; add trusted names with --allowed-hosts"))
	})
}

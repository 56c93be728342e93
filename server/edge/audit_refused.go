package edge

import (
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/gcscope/gcscope/server/httpapi"
)

// AuditRefusedWrites writes the audit line of a write refused where no handler wrote one
// (a query string on a route that takes none, an object the engine does not know, no
// engine yet, a method the route does not take): every refused write leaves a line.
func (e *Edge) AuditRefusedWrites(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
			next.ServeHTTP(w, r)
			return
		}
		trail := &auditTrail{}
		r = withTrail(r, trail)
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		body := &httpapi.HeadOf{Max: 4 << 10}
		ww.Tee(body)
		next.ServeHTTP(ww, r)
		if ww.Status() < http.StatusBadRequest || trail.written.Load() || trail.noRoute.Load() {
			return
		}
		var refusal httpapi.Error
		_ = json.Unmarshal(body.B, &refusal) // the API's refusals are JSON; the message stays empty otherwise
		entry := EntryFor(r, WriteAction(r))
		if c := trail.cluster.Load(); c != nil {
			entry.Cluster = *c // resolved under this middleware, in a context it does not see
		}
		entry.Result, entry.Status, entry.Error = "denied", ww.Status(), refusal.Message
		if ww.Status() >= http.StatusInternalServerError {
			entry.Result = "error"
		}
		e.audit.Write(entry)
	})
}

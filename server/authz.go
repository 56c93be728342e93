package server

import (
	"net/http"

	"github.com/gcscope/gcscope/server/access"
	"github.com/gcscope/gcscope/server/httpapi"
)

// visibilityFor is what the request's user may read of c; nil when every user reads
// everything.
func (s *Server) visibilityFor(r *http.Request, c *served) *access.Visibility {
	if c.Authorizer == nil {
		return nil
	}
	return access.New(r.Context(), userFrom(r), c.Authorizer, c.restMapper())
}

// permissionsFailed answers 503 when the user's permissions could not be checked: an
// empty answer would look like "you may see nothing". Route groups have visibleReads
// do this; objectCtx, which also serves writes, asks itself.
func permissionsFailed(w http.ResponseWriter, v *access.Visibility) bool {
	err := v.Err()
	if err == nil {
		return false
	}
	writeUnchecked(w, err)
	return true
}

// uncheckedMessage is the message of the 503 for a request whose permissions the cluster
// could not answer (writeUnchecked), also for a write refused with an audit line.
func uncheckedMessage(err error) string {
	return "cannot check your permissions with the cluster: " + err.Error()
}

// writeUnchecked answers 503: the user's permissions could not be checked, and an answer
// without them would look like "you may see nothing" or "forbidden".
func writeUnchecked(w http.ResponseWriter, err error) {
	httpapi.WriteJSON(w, http.StatusServiceUnavailable, httpapi.ErrUnavailable(uncheckedMessage(err)))
}

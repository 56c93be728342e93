package edge

import (
	"net/http"

	"github.com/gcscope/gcscope/server/access"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/served"
)

// VisibilityFor is what the request's user may read of c; nil when every user reads
// everything.
func (e *Edge) VisibilityFor(r *http.Request, c *served.Cluster) *access.Visibility {
	if c.Authorizer == nil {
		return nil
	}
	return access.New(r.Context(), UserFrom(r), c.Authorizer, c.RESTMapper())
}

// PermissionsFailed answers 503 when the user's permissions could not be checked: an
// empty answer would look like "you may see nothing". Route groups have VisibleReads
// do this; objectCtx, which also serves writes, asks itself.
func PermissionsFailed(w http.ResponseWriter, v *access.Visibility) bool {
	err := v.Err()
	if err == nil {
		return false
	}
	WriteUnchecked(w, err)
	return true
}

// UncheckedMessage is the message of the 503 for a request whose permissions the cluster
// could not answer (WriteUnchecked), also for a write refused with an audit line.
func UncheckedMessage(err error) string {
	return "cannot check your permissions with the cluster: " + err.Error()
}

// WriteUnchecked answers 503: the user's permissions could not be checked, and an answer
// without them would look like "you may see nothing" or "forbidden".
func WriteUnchecked(w http.ResponseWriter, err error) {
	httpapi.WriteJSON(w, http.StatusServiceUnavailable, httpapi.ErrUnavailable(UncheckedMessage(err)))
}

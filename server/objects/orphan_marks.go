package objects

// Orphan marks: the engine remembers, for a day, the ownerReferences its collector removed
// from an object (gc.OrphanMark). The object's routes carry them (redacted per user); this
// route forgets them once the user has read them.

import (
	"net/http"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
)

// orphanMarkEngine is an engine that keeps orphan marks (*gc.GarbageCollector does).
type orphanMarkEngine interface {
	DismissOrphanMarks(types.UID) (found bool, dismissed int)
}

// DismissResponse says how many marks went.
type DismissResponse struct {
	Dismissed int `json:"dismissed"`
}

// handleDismissOrphanMarks forgets the object's orphan marks, for every user of this
// gcscope. It writes nothing to the cluster and changes nothing the engine does, only
// what gcscope remembers to show, so --read-only allows it; it is a write all the same
// (CSRF, audit). The user must be able to see the object (objectCtx answers 404
// otherwise). The body is not read.
func (rs *Resource) handleDismissOrphanMarks(w http.ResponseWriter, r *http.Request) {
	node := edge.ObjectFrom(r)
	entry := edge.EntryFor(r, "dismissOrphanMarks")
	entry.Object = node.ObjectRef
	e, ok := edge.ClusterFrom(r).Engine.(orphanMarkEngine)
	if !ok {
		rs.Audit.RefuseWrite(w, entry, http.StatusServiceUnavailable, httpapi.ErrUnavailable("this engine keeps no orphan marks"))
		return
	}
	found, n := e.DismissOrphanMarks(node.UID)
	if !found {
		rs.Audit.RefuseWrite(w, entry, http.StatusNotFound, httpapi.ErrNotFound("the object left the graph"))
		return
	}
	entry.Result, entry.Status = "ok", http.StatusOK
	rs.Audit.Write(entry)
	httpapi.WriteJSON(w, http.StatusOK, DismissResponse{Dismissed: n})
}

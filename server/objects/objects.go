// Package objects is one object's routes (/objects/{uid}): objectCtx loads the object
// (or answers 404), then its state, its explanation, a delete predicted and made
// (delete.go), and its orphan marks dismissed (orphan_marks.go).
package objects

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
)

// Deps are what the object routes need of the server.
type Deps struct {
	Edge     *edge.Edge // preconditions and the write guard
	Audit    *edge.Audit
	ReadOnly bool
	Log      *slog.Logger
}

// Resource serves one object's routes.
type Resource struct{ Deps }

// New is the object routes with d.
func New(d Deps) *Resource { return &Resource{d} }

// Routes are the routes under /objects/{uid}. The route serves writes, so objectCtx
// checks permissions itself (WithVisibility, not VisibleReads).
func (rs *Resource) Routes(r chi.Router) {
	r.Use(httpapi.NoQuery, rs.Edge.RequireEngine, rs.Edge.WithVisibility, rs.objectCtx)
	r.With(httpapi.CompressJSON).Get("/", rs.handleObject)         // one object as the engine sees it
	r.With(httpapi.CompressJSON).Get("/explain", rs.handleExplain) // why it still exists, what it waits for
	r.With(middleware.RequestSize(edge.MaxBodyBytes), rs.Edge.GuardWrite).
		Post("/delete", rs.handleDelete) // predict, and unless dryRun perform, a delete
	r.With(middleware.RequestSize(edge.MaxBodyBytes), rs.Edge.GuardWrite).
		Post("/orphan-marks/dismiss", rs.handleDismissOrphanMarks) // forget its orphan marks (gcscope's memory only)
}

// objectCtx loads the object of the {uid} URL parameter and answers 404 early. The uid
// is unescaped: an escaped "/" (%2F) reaches it as part of the uid. A write to an object
// that is not there is audited. Under RequireEngine and WithVisibility.
func (rs *Resource) objectCtx(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw := chi.URLParam(r, "uid")
		uid, err := url.PathUnescape(raw)
		if err != nil {
			httpapi.WriteJSON(w, http.StatusBadRequest, httpapi.ErrBadRequest(fmt.Sprintf("uid %s is not validly escaped", httpapi.QuoteClip(raw))))
			return
		}
		n, ok := edge.ClusterFrom(r).Engine.Node(types.UID(uid))
		vis := edge.VisibilityFrom(r)
		if ok && !vis.Visible(n.ObjectRef) {
			if edge.PermissionsFailed(w, vis) {
				return
			}
			ok = false // an object the user may not list is answered as one that does not exist
		}
		if !ok {
			e := httpapi.ErrNotFound(fmt.Sprintf("no object with uid %s in the graph", httpapi.QuoteClip(uid)))
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				rs.Audit.Refuse(w, r, edge.WriteAction(r), http.StatusNotFound, e)
				return
			}
			httpapi.WriteJSON(w, http.StatusNotFound, e)
			return
		}
		next.ServeHTTP(w, edge.WithObject(r, n))
	})
}

// ObjectResponse is one object; HiddenDependents counts dependents the user may not see.
type ObjectResponse struct {
	gc.NodeDetail
	HiddenDependents int `json:"hiddenDependents,omitempty"`
}

func (rs *Resource) handleObject(w http.ResponseWriter, r *http.Request) {
	resp := ObjectResponse{NodeDetail: edge.ObjectFrom(r)}
	resp.Dependents, resp.HiddenDependents = edge.VisibilityFrom(r).Refs(resp.Dependents)
	resp.NodeState, _ = resp.NodeState.RedactedFor(edge.VisibilityFrom(r).Func())
	httpapi.WriteJSON(w, http.StatusOK, resp)
}

func (rs *Resource) handleExplain(w http.ResponseWriter, r *http.Request) {
	ex, ok := edge.ClusterFrom(r).Engine.ExplainFor(edge.ObjectFrom(r).UID, edge.VisibilityFrom(r).Func())
	if !ok {
		httpapi.WriteJSON(w, http.StatusNotFound, httpapi.ErrNotFound("the object left the graph"))
		return
	}
	resp := ExplainResponse{Explanation: ex}
	if edge.ClusterFrom(r).Deletions != nil {
		resp.Deletion = edge.ClusterFrom(r).Deletions.Explain(r.Context(), ex, edge.VisibilityFrom(r).Func())
		resp.Deletion.Amend(&resp.Explanation)
	}
	if resp.Words == nil {
		resp.Words = []string{} // a list, even empty
	}
	resp.Text = explainText(resp.Explanation, resp.Deletion)
	httpapi.WriteJSON(w, http.StatusOK, resp)
}

// ExplainResponse is the engine's explanation in data and in words, with what package
// deletion adds (a namespace's deletion, who added the finalizers that hold it).
type ExplainResponse struct {
	gc.Explanation
	Deletion *deletion.Report `json:"deletion,omitempty"`
	Text     string           `json:"text"`
}

func explainText(ex gc.Explanation, d *deletion.Report) string {
	o := ex.Object
	t := fmt.Sprintf("%s %s", o.Kind, o.Name)
	if o.Namespace != "" {
		t += " in " + o.Namespace
	}
	switch {
	case d != nil && d.Namespace != nil && d.Namespace.DeletionTimestamp != nil:
		t += ": Terminating; next, " + ex.Next + "."
	case strings.HasPrefix(ex.Next, "nothing"):
		t += ": next, the engine will do " + ex.Next + "." // "nothing: an object without owners is never collected"
	default:
		t += ": next, the engine will " + ex.Next + "."
	}
	for _, w := range ex.Words {
		t += " " + capitalize(w) + "."
	}
	return t
}

func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

package server

// One object: objectCtx loads it (or answers 404), then its state and its explanation.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/httpapi"
)

type ctxKey int

const (
	nodeKey ctxKey = iota
	visibilityKey
)

// objectCtx loads the object of the {uid} URL parameter and answers 404 early. The uid
// is unescaped: an escaped "/" (%2F) reaches it as part of the uid. A write to an object
// that is not there is audited. Under requireEngine and withVisibility.
func (s *Server) objectCtx(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw := chi.URLParam(r, "uid")
		uid, err := url.PathUnescape(raw)
		if err != nil {
			httpapi.WriteJSON(w, http.StatusBadRequest, httpapi.ErrBadRequest(fmt.Sprintf("uid %s is not validly escaped", httpapi.QuoteClip(raw))))
			return
		}
		n, ok := clusterFrom(r).Engine.Node(types.UID(uid))
		vis := visibilityFrom(r)
		if ok && !vis.Visible(n.ObjectRef) {
			if permissionsFailed(w, vis) {
				return
			}
			ok = false // an object the user may not list is answered as one that does not exist
		}
		if !ok {
			e := httpapi.ErrNotFound(fmt.Sprintf("no object with uid %s in the graph", httpapi.QuoteClip(uid)))
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				s.refuse(w, r, writeAction(r), http.StatusNotFound, e)
				return
			}
			httpapi.WriteJSON(w, http.StatusNotFound, e)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), nodeKey, n)))
	})
}

func nodeFrom(r *http.Request) gc.NodeDetail { return r.Context().Value(nodeKey).(gc.NodeDetail) }

// objectResponse is one object; HiddenDependents counts dependents the user may not see.
type objectResponse struct {
	gc.NodeDetail
	HiddenDependents int `json:"hiddenDependents,omitempty"`
}

func (s *Server) handleObject(w http.ResponseWriter, r *http.Request) {
	resp := objectResponse{NodeDetail: nodeFrom(r)}
	resp.Dependents, resp.HiddenDependents = visibilityFrom(r).Refs(resp.Dependents)
	resp.NodeState, _ = resp.NodeState.RedactedFor(visibilityFrom(r).Func())
	httpapi.WriteJSON(w, http.StatusOK, resp)
}

func (s *Server) handleExplain(w http.ResponseWriter, r *http.Request) {
	ex, ok := clusterFrom(r).Engine.ExplainFor(nodeFrom(r).UID, visibilityFrom(r).Func())
	if !ok {
		httpapi.WriteJSON(w, http.StatusNotFound, httpapi.ErrNotFound("the object left the graph"))
		return
	}
	resp := explainResponse{Explanation: ex}
	if clusterFrom(r).Deletions != nil {
		resp.Deletion = clusterFrom(r).Deletions.Explain(r.Context(), ex, visibilityFrom(r).Func())
		resp.Deletion.Amend(&resp.Explanation)
	}
	if resp.Words == nil {
		resp.Words = []string{} // a list, even empty
	}
	resp.Text = explainText(resp.Explanation, resp.Deletion)
	httpapi.WriteJSON(w, http.StatusOK, resp)
}

// explainResponse is the engine's explanation in data and in words, with what package
// deletion adds (a namespace's deletion, who added the finalizers that hold it).
type explainResponse struct {
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

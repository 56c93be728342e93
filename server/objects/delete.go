package objects

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/wire"
)

// DeleteResponse is the predicted effect and, unless dry run, the outcome.
type DeleteResponse struct {
	DryRun     bool          `json:"dryRun"`
	Prediction gc.Prediction `json:"prediction"`
	// Hidden counts the objects the delete would affect that the user may not see (they
	// are left out of the prediction; the cluster's collector acts on them all the same).
	Hidden int `json:"hidden,omitempty"`
	// What the delete does beyond the objects it deletes: the volumes of the claims that
	// go (data loss first), and what it leaves behind.
	deletion.Consequences
	// Result: "predicted" for a dry run, "deletion started" once the apiserver accepted it.
	Result string `json:"result"`
	// Refusal, on a dry run made as the user (--auth=kubernetes), is what the apiserver
	// answered a server-side dry run of the delete: the delete itself would be refused.
	Refusal string `json:"refusal,omitempty"`
}

// readOnlyDeletes answers a delete under --read-only.
const readOnlyDeletes = "gcscope runs read-only (--read-only): deletes are refused; a dryRun still predicts"

func (rs *Resource) handleDelete(w http.ResponseWriter, r *http.Request) {
	node := edge.ObjectFrom(r)
	user := edge.UserFrom(r)
	entry := edge.EntryFor(r, "delete")
	entry.Object = node.ObjectRef
	fail := func(status int, e *httpapi.Error) { rs.Audit.RefuseWrite(w, entry, status, e) }

	req, perr := wire.ParseDeleteRequest(r.Body)
	if !AdmitDelete(w, rs.Audit, rs.ReadOnly, &entry, perr, req.PropagationPolicy, &req.DryRun) {
		return
	}
	policy := metav1.DeletionPropagation(req.PropagationPolicy)
	if node.Virtual {
		fail(http.StatusNotFound, httpapi.ErrNotFound("the object is only named as an owner; it has not been observed, so there is nothing to delete"))
		return
	}
	c := edge.ClusterFrom(r)
	predict := c.Engine.PredictDelete
	if c.Deletions != nil && deletion.IsNamespace(node.ObjectRef) {
		predict = c.Deletions.PredictNamespace // its content goes with it, by the namespace controller
	}
	prediction, ok := predict(node.UID, policy)
	if !ok {
		fail(http.StatusNotFound, httpapi.ErrNotFound("the object left the graph"))
		return
	}
	prediction, hidden := edge.VisibilityFrom(r).Prediction(prediction)
	resp := DeleteResponse{DryRun: req.DryRun, Prediction: prediction, Hidden: hidden, Result: "predicted"}
	if c.Deletions != nil {
		resp.Consequences = c.Deletions.Consequences(r.Context(), prediction, edge.VisibilityFrom(r).Func())
	}
	if req.DryRun && user.Impersonate && !rs.ReadOnly && c.Kube != nil {
		// The prediction is the collector's; whether the user may delete at all is the
		// cluster's RBAC (and admission) to say: ask it, as the user, without deleting.
		err := c.Deleter().Delete(r.Context(), user, node.ObjectRef, policy, metav1.DryRunAll)
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			resp.Refusal = status.Status().Message
			entry.Error = "the cluster would refuse it: " + resp.Refusal
		} else if err != nil {
			rs.Log.Debug("dry-run delete as the user", "err", err)
		}
	}
	if !req.DryRun {
		if c.Kube == nil {
			fail(http.StatusServiceUnavailable, httpapi.ErrUnavailable("no cluster connection for writes"))
			return
		}
		if err := c.Deleter().Delete(r.Context(), user, node.ObjectRef, policy); err != nil {
			var status apierrors.APIStatus
			if errors.As(err, &status) {
				st := status.Status()
				fail(int(st.Code), httpapi.ErrAPIServer(string(st.Reason), st.Message))
				return
			}
			fail(http.StatusBadGateway, httpapi.ErrAPIServer("", err.Error()))
			return
		}
		resp.Result = "deletion started"
	}
	entry.Result, entry.Status = "ok", http.StatusOK
	rs.Audit.Write(entry)
	httpapi.WriteJSON(w, http.StatusOK, resp)
}

// AdmitDelete refuses, audited, a delete whose body did not parse (logged as what it is:
// no policy and no dryRun were read from it) and a real delete on a read-only server;
// otherwise it notes the policy and dry run on entry for the lines to come.
func AdmitDelete(w http.ResponseWriter, audit *edge.Audit, readOnly bool, entry *edge.Entry, perr *wire.Error, policy string, dryRun *bool) bool {
	if perr != nil {
		entry.Unparsable = true
		audit.RefuseWrite(w, *entry, http.StatusBadRequest, httpapi.ErrBadRequest(perr.Message, perr.Allowed...))
		return false
	}
	entry.Policy, entry.DryRun = policy, dryRun
	if readOnly && !*dryRun {
		audit.RefuseWrite(w, *entry, http.StatusForbidden, httpapi.ErrReadOnly(readOnlyDeletes))
		return false
	}
	return true
}

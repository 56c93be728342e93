package deletions

import (
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/selection"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/objects"
	"github.com/gcscope/gcscope/server/wire"
)

// Several objects deleted with one confirmation (the page's multi-select): predicted
// together, as the collector acts when they all go at once, then deleted one by one, each
// with its UID precondition and its own audit line.

// maxSetBodyBytes bounds a set delete's body: wire.MaxSetObjects uids, or a manifest.
const maxSetBodyBytes = 4 << 20

// setEngine is an engine that predicts sets (*gc.GarbageCollector).
type setEngine interface {
	PredictDeleteSet([]types.UID, metav1.DeletionPropagation) (gc.Prediction, []types.UID)
}

// DeleteSetResponse is a set's predicted effect and, unless dry run, each delete's outcome.
type DeleteSetResponse struct {
	DryRun bool `json:"dryRun"`
	// Set is what a selector, manifest, release or Application named, resolved.
	Set        *selection.Set `json:"set,omitempty"`
	Prediction gc.Prediction  `json:"prediction"`
	Hidden     int            `json:"hidden,omitempty"`
	// Missing are the uids asked for that the graph does not hold (or the user may not see).
	Missing []string `json:"missing,omitempty"`
	deletion.Consequences
	// Refusals, on a dry run made as the user, are the targets a server-side dry run
	// refused, with its message.
	Refusals []SetOutcome `json:"refusals,omitempty"`
	// Outcomes, unless dry run, are each target's delete: "deletion started" or its error.
	Outcomes []SetOutcome `json:"outcomes,omitempty"`
	Result   string       `json:"result"`
}

type SetOutcome struct {
	Object gc.ObjectRef `json:"object"`
	Result string       `json:"result,omitempty"`
	Error  string       `json:"error,omitempty"`
}

func (rs *Resource) handleDeleteSet(w http.ResponseWriter, r *http.Request) {
	entry := edge.EntryFor(r, "deleteSet")
	fail := func(status int, e *httpapi.Error) { rs.Audit.RefuseWrite(w, entry, status, e) }
	req, perr := wire.ParseDeleteSetRequest(r.Body)
	if !objects.AdmitDelete(w, rs.Audit, rs.ReadOnly, &entry, perr, req.PropagationPolicy, &req.DryRun) {
		return
	}
	policy := metav1.DeletionPropagation(req.PropagationPolicy)
	c := edge.ClusterFrom(r)
	engine, ok := c.Engine.(setEngine)
	if !ok {
		fail(http.StatusNotImplemented, httpapi.ErrUnavailable("this cluster's engine does not predict sets"))
		return
	}
	if why := req.Predicted(); why != "" && !req.DryRun {
		fail(http.StatusBadRequest, httpapi.ErrBadRequest(why))
		return
	}
	vis := edge.VisibilityFrom(r)
	resp := DeleteSetResponse{DryRun: req.DryRun, Result: "predicted"}
	named := req.UIDs
	if named == nil {
		set, status, e := resolveSet(r, c, &req)
		if e != nil {
			fail(status, e)
			return
		}
		resp.Set = &set
		for _, o := range set.Objects {
			named = append(named, string(o.UID))
		}
		if len(named) == 0 {
			entry.Result, entry.Status = "ok", http.StatusOK
			rs.Audit.Write(entry)
			resp.Result = "nothing to delete"
			httpapi.WriteJSON(w, http.StatusOK, resp)
			return
		}
	}
	var uids []types.UID
	for _, u := range named {
		n, ok := c.Engine.Node(types.UID(u))
		if !ok || n.Virtual || !vis.Visible(n.ObjectRef) {
			resp.Missing = append(resp.Missing, u) // a hidden object is answered as one that does not exist
			continue
		}
		uids = append(uids, n.UID)
	}
	if edge.PermissionsFailed(w, vis) {
		return
	}
	if len(uids) == 0 {
		fail(http.StatusNotFound, httpapi.ErrNotFound(fmt.Sprintf("none of the %d objects named is in the graph", len(named))))
		return
	}
	prediction, gone := engine.PredictDeleteSet(uids, policy)
	for _, u := range gone {
		resp.Missing = append(resp.Missing, string(u))
	}
	resp.Prediction, resp.Hidden = vis.Prediction(prediction)
	if c.Deletions != nil {
		resp.Consequences = c.Deletions.Consequences(r.Context(), resp.Prediction, vis.Func())
	}
	if resp.Set != nil {
		resp.LeftBehind = append(resp.Set.LeftBehind(resp.Prediction), resp.LeftBehind...)
	}
	targets := resp.Prediction.Targets
	if len(targets) == 0 {
		targets = []gc.ObjectRef{resp.Prediction.Target}
	}
	user := edge.UserFrom(r)
	if req.DryRun && user.Impersonate && !rs.ReadOnly && c.Kube != nil {
		d := c.Deleter()
		for _, t := range targets {
			var status apierrors.APIStatus
			if err := d.Delete(r.Context(), user, t, policy, metav1.DryRunAll); errors.As(err, &status) {
				resp.Refusals = append(resp.Refusals, SetOutcome{Object: t, Error: status.Status().Message})
			}
		}
	}
	if !req.DryRun {
		if c.Kube == nil {
			fail(http.StatusServiceUnavailable, httpapi.ErrUnavailable("no cluster connection for writes"))
			return
		}
		d := c.Deleter()
		for _, t := range targets {
			one := edge.EntryFor(r, "delete")
			one.Object, one.Policy, one.DryRun = t, req.PropagationPolicy, &req.DryRun
			if err := d.Delete(r.Context(), user, t, policy); err != nil {
				one.Result, one.Status, one.Error = "error", http.StatusBadGateway, err.Error()
				var status apierrors.APIStatus
				if errors.As(err, &status) {
					one.Result, one.Status, one.Error = "denied", int(status.Status().Code), status.Status().Message
				}
				rs.Audit.Write(one)
				resp.Outcomes = append(resp.Outcomes, SetOutcome{Object: t, Error: one.Error})
				continue
			}
			one.Result, one.Status = "ok", http.StatusOK
			rs.Audit.Write(one)
			resp.Outcomes = append(resp.Outcomes, SetOutcome{Object: t, Result: "deletion started"})
		}
		resp.Result = "deletions started"
	}
	entry.Result, entry.Status = "ok", http.StatusOK
	rs.Audit.Write(entry)
	httpapi.WriteJSON(w, http.StatusOK, resp)
}

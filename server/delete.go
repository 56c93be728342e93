package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/wire"
)

// deleteResponse is the predicted effect and, unless dry run, the outcome.
type deleteResponse struct {
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

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	node := nodeFrom(r)
	user := userFrom(r)
	entry := entryFor(r, "delete")
	entry.Object = node.ObjectRef
	fail := func(status int, e *httpapi.Error) { s.refuseWrite(w, entry, status, e) }

	req, perr := wire.ParseDeleteRequest(r.Body)
	if !s.admitDelete(w, &entry, perr, req.PropagationPolicy, &req.DryRun) {
		return
	}
	policy := metav1.DeletionPropagation(req.PropagationPolicy)
	if node.Virtual {
		fail(http.StatusNotFound, httpapi.ErrNotFound("the object is only named as an owner; it has not been observed, so there is nothing to delete"))
		return
	}
	c := clusterFrom(r)
	predict := c.Engine.PredictDelete
	if c.Deletions != nil && deletion.IsNamespace(node.ObjectRef) {
		predict = c.Deletions.PredictNamespace // its content goes with it, by the namespace controller
	}
	prediction, ok := predict(node.UID, policy)
	if !ok {
		fail(http.StatusNotFound, httpapi.ErrNotFound("the object left the graph"))
		return
	}
	prediction, hidden := visibilityFrom(r).Prediction(prediction)
	resp := deleteResponse{DryRun: req.DryRun, Prediction: prediction, Hidden: hidden, Result: "predicted"}
	if c.Deletions != nil {
		resp.Consequences = c.Deletions.Consequences(r.Context(), prediction, visibilityFrom(r).Func())
	}
	if req.DryRun && user.Impersonate && !s.opts.ReadOnly && c.Kube != nil {
		// The prediction is the collector's; whether the user may delete at all is the
		// cluster's RBAC (and admission) to say: ask it, as the user, without deleting.
		err := c.deleter().delete(r.Context(), user, node.ObjectRef, policy, metav1.DryRunAll)
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			resp.Refusal = status.Status().Message
			entry.Error = "the cluster would refuse it: " + resp.Refusal
		} else if err != nil {
			s.log.Debug("dry-run delete as the user", "err", err)
		}
	}
	if !req.DryRun {
		if c.Kube == nil {
			fail(http.StatusServiceUnavailable, httpapi.ErrUnavailable("no cluster connection for writes"))
			return
		}
		if err := c.deleter().delete(r.Context(), user, node.ObjectRef, policy); err != nil {
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
	s.audit.write(entry)
	httpapi.WriteJSON(w, http.StatusOK, resp)
}

// deleter performs deletes on the cluster with a UID precondition, as the requesting user
// when the authenticator asks for impersonation. One per cluster: its transport (and so
// its connections) is made once and shared by every delete, each user's impersonation
// wrapped around it per request.
type deleter struct {
	config *rest.Config
	mapper meta.RESTMapper

	once  sync.Once
	base  http.RoundTripper  // the cluster's transport, without impersonation
	plain metadata.Interface // deletes as gcscope itself
	err   error
}

// deleter is c's deleter, made on first use.
func (c *served) deleter() *deleter {
	c.deletesOnce.Do(func() { c.deletes = &deleter{config: c.Kube, mapper: c.restMapper()} })
	return c.deletes
}

// client is the metadata client deletes go through, as user.
func (d *deleter) client(user *User) (metadata.Interface, error) {
	d.once.Do(func() {
		if d.base, d.err = rest.TransportFor(d.config); d.err != nil {
			return
		}
		d.plain, d.err = metadata.NewForConfigAndClient(d.config, &http.Client{Transport: d.base, Timeout: d.config.Timeout})
	})
	if d.err != nil || !user.Impersonate {
		return d.plain, d.err
	}
	imp := transport.ImpersonationConfig{UserName: user.Name, UID: user.UID, Groups: user.Groups, Extra: user.Extra}
	return metadata.NewForConfigAndClient(d.config, &http.Client{Transport: transport.NewImpersonatingRoundTripper(imp, d.base), Timeout: d.config.Timeout})
}

// delete deletes ref with policy as user; with dryRun (metav1.DryRunAll) the apiserver
// only decides (RBAC, admission) and deletes nothing.
func (d *deleter) delete(ctx context.Context, user *User, ref gc.ObjectRef, policy metav1.DeletionPropagation, dryRun ...string) error {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return err
	}
	mapping, err := d.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, gv.Version)
	if err != nil {
		return fmt.Errorf("kind %s of %s is not served: %w", ref.Kind, ref.APIVersion, err)
	}
	client, err := d.client(user)
	if err != nil {
		return err
	}
	var rc metadata.ResourceInterface = client.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		rc = client.Resource(mapping.Resource).Namespace(ref.Namespace)
	}
	uid := ref.UID
	return rc.Delete(ctx, ref.Name, metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}, DryRun: dryRun})
}

// admitDelete refuses, audited, a delete whose body did not parse (logged as what it is:
// no policy and no dryRun were read from it) and a real delete on a read-only server;
// otherwise it notes the policy and dry run on entry for the lines to come.
func (s *Server) admitDelete(w http.ResponseWriter, entry *auditEntry, perr *wire.Error, policy string, dryRun *bool) bool {
	if perr != nil {
		entry.Unparsable = true
		s.refuseWrite(w, *entry, http.StatusBadRequest, httpapi.ErrBadRequest(perr.Message, perr.Allowed...))
		return false
	}
	entry.Policy, entry.DryRun = policy, dryRun
	if s.opts.ReadOnly && !*dryRun {
		s.refuseWrite(w, *entry, http.StatusForbidden, httpapi.ErrReadOnly(readOnlyDeletes))
		return false
	}
	return true
}

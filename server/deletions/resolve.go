package deletions

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/gcscope/gcscope/selection"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/served"
	"github.com/gcscope/gcscope/server/wire"
)

// A set named by a selector, a manifest, a Helm release or an Argo CD Application is
// read from the cluster as its tool would read it (package selection), with the user's
// own credentials when gcscope acts as them: what they may not read, they cannot name.

// resolveSet reads what req names. The error is the answer to give.
func resolveSet(r *http.Request, c *served.Cluster, req *wire.DeleteSetRequest) (selection.Set, int, *httpapi.Error) {
	if c.Kube == nil {
		return selection.Set{}, http.StatusServiceUnavailable, httpapi.ErrUnavailable("no cluster connection to read the set from")
	}
	cfg := rest.CopyConfig(c.Kube)
	if u := edge.UserFrom(r); u.Impersonate {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
	}
	src, err := selection.NewSource(cfg, c.RESTMapper(), "default")
	if err != nil {
		return selection.Set{}, http.StatusInternalServerError, httpapi.ErrUnavailable(err.Error())
	}
	ctx := r.Context()
	var set selection.Set
	switch {
	case req.Selector != nil:
		sel := req.Selector
		set, err = src.Selector(ctx, sel.Types, sel.LabelSelector, sel.Namespace, sel.AllNamespaces)
	case req.Manifest != nil:
		if req.Manifest.Namespace != "" {
			src.Namespace = req.Manifest.Namespace
		}
		var docs []selection.Document
		if docs, err = selection.ParseManifest([]byte(req.Manifest.Text), "the manifest"); err != nil {
			return set, http.StatusBadRequest, httpapi.ErrBadRequest(err.Error())
		}
		set, err = src.Manifest(ctx, docs, "kubectl delete -f")
	case req.HelmRelease != nil:
		set, err = src.HelmRelease(ctx, req.HelmRelease.Name, req.HelmRelease.Namespace)
	default:
		set, err = src.ArgoCDApplication(ctx, req.ArgoCDApplication.Name, req.ArgoCDApplication.Namespace)
	}
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return set, 0, nil
	case errors.As(err, &status):
		st := status.Status()
		return set, int(st.Code), httpapi.ErrAPIServer(string(st.Reason), err.Error())
	default: // what the set names is not there, or not served: the request's to change
		return set, http.StatusBadRequest, httpapi.ErrBadRequest(err.Error())
	}
}

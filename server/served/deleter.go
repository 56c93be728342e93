package served

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/security"
)

// Deleter performs deletes on the cluster with a UID precondition, as the requesting user
// when the authenticator asks for impersonation. One per cluster: its transport (and so
// its connections) is made once and shared by every delete, each user's impersonation
// wrapped around it per request.
type Deleter struct {
	config *rest.Config
	mapper meta.RESTMapper

	once  sync.Once
	base  http.RoundTripper  // the cluster's transport, without impersonation
	plain metadata.Interface // deletes as gcscope itself
	err   error
}

// Deleter is c's deleter, made on first use.
func (c *Cluster) Deleter() *Deleter {
	c.deletesOnce.Do(func() { c.deletes = &Deleter{config: c.Kube, mapper: c.RESTMapper()} })
	return c.deletes
}

// client is the metadata client deletes go through, as user.
func (d *Deleter) client(user *security.User) (metadata.Interface, error) {
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

// Delete deletes ref with policy as user; with dryRun (metav1.DryRunAll) the apiserver
// only decides (RBAC, admission) and deletes nothing.
func (d *Deleter) Delete(ctx context.Context, user *security.User, ref gc.ObjectRef, policy metav1.DeletionPropagation, dryRun ...string) error {
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

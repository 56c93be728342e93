package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gcscope/gcscope/selection"
)

// Client rate limits: the one-shot sync lists every resource, and the engine's workers
// look owners up; kubectl's own defaults (5 qps) would make a large cluster crawl.
const (
	clientQPS   = 50
	clientBurst = 100
	// requestTimeout bounds discovery and the look-up of the named object (never the
	// engine's watches).
	requestTimeout = 30 * time.Second
)

// kube is the cluster of the kubeconfig context, as the plugin talks to it.
type kube struct {
	// config is for the engine: no request timeout, so its watches stay open.
	config *rest.Config
	// short has requestTimeout, for one-off requests.
	short     *rest.Config
	context   string // the kubeconfig context in use
	namespace string // -n, else the context's namespace, else "default"
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
	metadata  metadata.Interface
}

// connect loads the kubeconfig as kubectl does ($KUBECONFIG, else ~/.kube/config;
// --kubeconfig, --context, -n and --as override) and builds the clients. It makes no
// request.
func connect(o *options) (*kube, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.Precedence = []string{clientcmd.RecommendedHomeFile}
	if env := o.getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		rules.Precedence = filepath.SplitList(env)
	}
	rules.ExplicitPath = o.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.context}
	overrides.Context.Namespace = o.namespace
	overrides.AuthInfo.Impersonate = o.as
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	rc, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, errors.New("no kubeconfig found: set KUBECONFIG, pass --kubeconfig, or create ~/.kube/config")
		}
		return nil, fmt.Errorf("kubeconfig: %s", oneLine(err))
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %s", oneLine(err))
	}
	k := &kube{namespace: ns, context: o.context}
	if k.context == "" {
		if raw, err := cc.RawConfig(); err == nil {
			k.context = raw.CurrentContext
		}
	}
	rc.QPS, rc.Burst = clientQPS, clientBurst
	// Deprecation warnings of resources the engine lists are no business of the reader.
	rc.WarningHandler = rest.NoWarnings{}
	rc.UserAgent = "kubectl-gcscope/" + version
	k.config = rc
	k.short = rest.CopyConfig(rc)
	k.short.Timeout = requestTimeout

	dc, err := discovery.NewDiscoveryClientForConfig(k.short)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %s", oneLine(err))
	}
	k.discovery = memory.NewMemCacheClient(dc)
	k.mapper = restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(k.discovery), k.discovery, func(string) {})
	if k.metadata, err = metadata.NewForConfig(k.short); err != nil {
		return nil, fmt.Errorf("kubeconfig: %s", oneLine(err))
	}
	return k, nil
}

// reached connects (connect) and checks that the cluster answers (reach): where every
// command that reads the cluster begins.
func reached(o *options) (*kube, error) {
	k, err := connect(o)
	if err != nil {
		return nil, err
	}
	if err := k.reach(); err != nil {
		return nil, err
	}
	return k, nil
}

// reach reads the cluster's API groups: the first request, whose failure says whether the
// cluster can be reached at all and with these credentials.
func (k *kube) reach() error {
	_, err := k.discovery.ServerGroups()
	if err == nil || discovery.IsGroupDiscoveryFailedError(err) {
		return nil // some aggregated API is down: the others still answer
	}
	return k.apiError(err, "")
}

// apiError says in one line what a failed request means: refused credentials, a
// forbidden read, or an unreachable cluster. notFound, if set, is what to say for a 404.
func (k *kube) apiError(err error, notFound string) error {
	switch {
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the cluster at %s refused the credentials of context %q (Unauthorized): log in again or check the kubeconfig's user", k.config.Host, k.context)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("forbidden: %s", oneLine(err))
	case apierrors.IsNotFound(err) && notFound != "":
		return errors.New(notFound)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Errorf("the cluster at %s answered: %s", k.config.Host, oneLine(err))
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err // the URL is said once, below
	}
	return fmt.Errorf("cannot reach the cluster at %s (context %q): %s", k.config.Host, k.context, oneLine(err))
}

// target is the object named on the command line, resolved.
type target struct {
	mapping   *meta.RESTMapping
	namespace string // "" for a cluster-scoped kind
	name      string
}

// String names the target as kubectl does in its messages: deployments.apps "web".
func (t target) String() string {
	return fmt.Sprintf("%s %q", resourceName(t.mapping.Resource.GroupResource()), t.name)
}

// notFound says the target does not exist, with its namespace.
func (t target) notFound() string {
	if t.namespace == "" {
		return t.String() + " not found"
	}
	return fmt.Sprintf("%s not found in namespace %q", t, t.namespace)
}

func resourceName(gr schema.GroupResource) string {
	if gr.Group == "" {
		return gr.Resource
	}
	return gr.Resource + "." + gr.Group
}

// splitObjectArg reads KIND/NAME (or KIND NAME, as kubectl also accepts).
func splitObjectArg(args []string) (kind, name string, err error) {
	switch {
	case len(args) == 1 && strings.Count(args[0], "/") == 1:
		kind, name, _ = strings.Cut(args[0], "/")
	case len(args) == 2 && !strings.Contains(args[0], "/") && !strings.Contains(args[1], "/"):
		kind, name = args[0], args[1]
	case len(args) == 0:
		return "", "", usageError{errors.New("name an object as KIND/NAME, for example deploy/web")}
	default:
		return "", "", usageError{fmt.Errorf("%q: name one object as KIND/NAME, for example deploy/web", strings.Join(args, " "))}
	}
	if kind == "" || name == "" {
		return "", "", usageError{fmt.Errorf("%q: name an object as KIND/NAME, for example deploy/web", strings.Join(args, " "))}
	}
	return kind, name, nil
}

// resolve maps KIND (a resource, its short name, singular or kind, optionally with
// .version.group or .group) to the served resource, as kubectl does: deploy, deployment,
// deployments.apps, Deployment, rs, pod, cm.
func (k *kube) resolve(kind, name string) (target, error) {
	gvk, err := k.kindFor(kind)
	if err != nil {
		return target{}, err
	}
	m, err := k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return target{}, fmt.Errorf("the server doesn't have a resource type %q", kind)
	}
	t := target{mapping: m, name: name}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		t.namespace = k.namespace
	}
	return t, nil
}

// kindFor reads KIND as kubectl does (selection.KindFor); a failure to read discovery
// is said as the apiserver's.
func (k *kube) kindFor(arg string) (schema.GroupVersionKind, error) {
	gvk, err := selection.KindFor(k.mapper, arg)
	if err != nil && !errors.Is(err, selection.ErrUnknownType) && !errors.Is(err, selection.ErrAmbiguousType) {
		return gvk, k.apiError(err, "")
	}
	return gvk, err
}

// get reads the target's metadata: proof that it exists, and its uid.
func (k *kube) get(ctx context.Context, t target) (*metav1.PartialObjectMetadata, error) {
	r := k.metadata.Resource(t.mapping.Resource)
	var (
		obj *metav1.PartialObjectMetadata
		err error
	)
	if t.namespace == "" {
		obj, err = r.Get(ctx, t.name, metav1.GetOptions{})
	} else {
		obj, err = r.Namespace(t.namespace).Get(ctx, t.name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, k.apiError(err, t.notFound())
	}
	return obj, nil
}

// oneLine folds an error's text on one line.
func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// served reports whether the cluster serves apiVersion and kind (as the engine asks when
// it narrates an explanation).
func (k *kube) served(apiVersion, kind string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return false
	}
	_, err = k.mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	return err == nil
}

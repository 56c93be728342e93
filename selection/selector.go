package selection

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gcscope/gcscope/gc"
)

// kubectl delete TYPE[,TYPE…] -l SELECTOR [-n NS | -A]: every object of the types that
// the selector matches, in one namespace or all.

// ErrUnknownType is a type the cluster does not serve; ErrAmbiguousType, a short name
// several groups serve.
var (
	ErrUnknownType   = errors.New("the server doesn't have a resource type")
	ErrAmbiguousType = errors.New("is ambiguous")
)

// KindFor reads a type as kubectl does: as a resource (deployments.v1.apps,
// deployments.apps, deploy), then as a kind (Deployment.v1.apps, Deployment.apps,
// Deployment). An error that is not the mapper's "no match" is returned as it is.
func KindFor(mapper meta.RESTMapper, arg string) (schema.GroupVersionKind, error) {
	fullGVR, gr := schema.ParseResourceArg(strings.ToLower(arg))
	if fullGVR != nil {
		if gvk, err := mapper.KindFor(*fullGVR); err == nil {
			return gvk, nil
		}
	}
	gvk, err := mapper.KindFor(gr.WithVersion(""))
	if err == nil {
		return gvk, nil
	}
	var amb *meta.AmbiguousResourceError
	switch {
	case errors.As(err, &amb):
		return schema.GroupVersionKind{}, fmt.Errorf("%q %w: %s; name its group too (RESOURCE.GROUP)", arg, ErrAmbiguousType, strings.Join(strings.Fields(err.Error()), " "))
	case !meta.IsNoMatchError(err):
		return schema.GroupVersionKind{}, err
	}
	fullGVK, gk := schema.ParseKindArg(arg)
	if fullGVK != nil {
		if m, err := mapper.RESTMapping(fullGVK.GroupKind(), fullGVK.Version); err == nil {
			return m.GroupVersionKind, nil
		}
	}
	if m, err := mapper.RESTMapping(gk); err == nil {
		return m.GroupVersionKind, nil
	}
	return schema.GroupVersionKind{}, fmt.Errorf("%w %q", ErrUnknownType, arg)
}

// Selector resolves kubectl delete TYPES -l selector: in namespace (the Source's when
// empty), or in all namespaces with all. Matching is the apiserver's (a LIST per type,
// paged).
func (s *Source) Selector(ctx context.Context, types []string, selector, namespace string, all bool) (Set, error) {
	if len(types) == 0 {
		return Set{}, fmt.Errorf("-l %s: name the types to delete, as kubectl delete does (deploy,svc -l %s)", selector, selector)
	}
	if _, err := labels.Parse(selector); err != nil {
		return Set{}, fmt.Errorf("selector %q: %v", selector, err)
	}
	if namespace == "" {
		namespace = s.Namespace
	}
	where := " -n " + namespace
	if all {
		where = " -A"
	}
	set := Set{Describe: fmt.Sprintf("kubectl delete %s -l %s%s", strings.Join(types, ","), selector, where)}
	for _, t := range types {
		gvk, err := KindFor(s.Mapper, t)
		if err != nil {
			return Set{}, err
		}
		m, err := s.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return Set{}, fmt.Errorf("%w %q", ErrUnknownType, t)
		}
		var r = s.metadata.Resource(m.Resource)
		list := r.List
		if m.Scope.Name() == meta.RESTScopeNameNamespace && !all {
			list = r.Namespace(namespace).List
		}
		opts := metav1.ListOptions{LabelSelector: selector, Limit: 500}
		for {
			l, err := withTimeout(ctx, s.Timeout, func(ctx context.Context) (*metav1.PartialObjectMetadataList, error) { return list(ctx, opts) })
			if err != nil {
				return Set{}, fmt.Errorf("listing %s: %w", m.Resource.Resource, err)
			}
			for _, o := range l.Items {
				set.Objects = append(set.Objects, gc.ObjectRef{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: o.Namespace, Name: o.Name, UID: o.UID})
			}
			if len(set.Objects) > MaxObjects {
				return Set{}, tooMany(len(set.Objects), set.Describe)
			}
			if opts.Continue = l.Continue; opts.Continue == "" {
				break
			}
		}
	}
	return set, nil
}

package selection

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
)

// MaxObjects bounds the entries one set may name (documents, resources of a release).
const MaxObjects = 5000

// Source reads the cluster for a set: with its config's credentials, kinds mapped by
// Mapper, namespaced entries without a namespace put in Namespace.
type Source struct {
	Mapper    meta.RESTMapper
	Namespace string
	metadata  metadata.Interface
	dynamic   dynamic.Interface
	core      kubernetes.Interface
	// Timeout bounds each request; default 30 s.
	Timeout time.Duration
}

// NewSource builds a Source's clients from cfg.
func NewSource(cfg *rest.Config, mapper meta.RESTMapper, namespace string) (*Source, error) {
	s := &Source{Mapper: mapper, Namespace: namespace, Timeout: 30 * time.Second}
	var err error
	if s.metadata, err = metadata.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if s.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if s.core, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return s, nil
}

// Set is what a set delete names, resolved.
type Set struct {
	// Describe is the delete as its tool is run ("helm uninstall web -n shop").
	Describe string `json:"describe"`
	// Objects are the live objects it deletes (UIDs set), in the order named.
	Objects []gc.ObjectRef `json:"objects"`
	// Missing are the entries the cluster does not hold, or whose kind it does not serve.
	Missing []Miss `json:"missing,omitempty"`
	// Kept are live objects the tool names but does not delete (Helm's keep policy, hooks,
	// an Application without its resources finalizer), with why.
	Kept []Kept `json:"kept,omitempty"`
	// Notes are what the tool does beyond deleting the objects (hooks it runs, who deletes
	// what and when).
	Notes []string `json:"notes,omitempty"`
}

// Miss is an entry a set names that the cluster does not hold.
type Miss struct {
	Object gc.ObjectRef `json:"object"` // as named: no uid
	Reason string       `json:"reason"`
}

// Kept is a live object a set names but leaves in place.
type Kept struct {
	Object gc.ObjectRef `json:"object"`
	Reason string       `json:"reason"`
}

// UIDs are the uids of the objects the set deletes.
func (s *Set) UIDs() []types.UID {
	out := make([]types.UID, 0, len(s.Objects))
	for _, o := range s.Objects {
		out = append(out, o.UID)
	}
	return out
}

// readsPerListing is how many names of one resource in one namespace are read with a
// GET each; past it, one LIST reads them all.
const readsPerListing = 4

// entry is one object a set names, and what becomes of it once resolved.
type entry struct {
	ref     gc.ObjectRef // as named
	mapping *meta.RESTMapping
	where   string // where it was named (a manifest's document), for what is missing
	keep    string // why the tool leaves it in place ("": it deletes it)
	found   gc.ObjectRef
	miss    string
}

// resolve finds each entry's live object: its kind mapped, its namespace defaulted as
// kubectl does, then read (a GET each, or a LIST per resource and namespace).
func (s *Source) resolve(ctx context.Context, entries []*entry) error {
	type group struct {
		gvr schema.GroupVersionResource
		ns  string
	}
	groups := map[group][]*entry{}
	var order []group
	for _, e := range entries {
		if e.ref.Name == "" {
			e.miss = "it has no name (metadata.name): there is no object to delete"
			continue
		}
		gv, err := schema.ParseGroupVersion(e.ref.APIVersion)
		if err != nil || e.ref.Kind == "" {
			e.miss = fmt.Sprintf("apiVersion %q and kind %q name no type", e.ref.APIVersion, e.ref.Kind)
			continue
		}
		m, err := s.Mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: e.ref.Kind}, gv.Version)
		if err != nil {
			e.miss = fmt.Sprintf("the cluster does not serve %s %s", e.ref.Kind, e.ref.APIVersion)
			continue
		}
		e.mapping = m
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			if e.ref.Namespace == "" {
				e.ref.Namespace = s.Namespace
			}
		} else {
			e.ref.Namespace = ""
		}
		g := group{m.Resource, e.ref.Namespace}
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], e)
	}
	for _, g := range order {
		if err := s.read(ctx, g.gvr, g.ns, groups[g]); err != nil {
			return err
		}
	}
	return nil
}

// read reads the entries of one resource in one namespace.
func (s *Source) read(ctx context.Context, gvr schema.GroupVersionResource, ns string, entries []*entry) error {
	rc := s.metadata.Resource(gvr)
	var r metadata.ResourceInterface = rc
	if ns != "" {
		r = rc.Namespace(ns)
	}
	found := func(e *entry, m *metav1.PartialObjectMetadata) {
		e.found = gc.ObjectRef{APIVersion: e.mapping.GroupVersionKind.GroupVersion().String(), Kind: e.mapping.GroupVersionKind.Kind,
			Namespace: m.Namespace, Name: m.Name, UID: m.UID}
	}
	if len(entries) <= readsPerListing {
		for _, e := range entries {
			m, err := withTimeout(ctx, s.Timeout, func(ctx context.Context) (*metav1.PartialObjectMetadata, error) {
				return r.Get(ctx, e.ref.Name, metav1.GetOptions{})
			})
			switch {
			case apierrors.IsNotFound(err):
				e.miss = "not found"
			case err != nil:
				return readError(err, e.ref)
			default:
				found(e, m)
			}
		}
		return nil
	}
	byName := map[string]*metav1.PartialObjectMetadata{}
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := withTimeout(ctx, s.Timeout, func(ctx context.Context) (*metav1.PartialObjectMetadataList, error) { return r.List(ctx, opts) })
		if err != nil {
			return readError(err, entries[0].ref)
		}
		for i := range l.Items {
			byName[l.Items[i].Name] = &l.Items[i]
		}
		if opts.Continue = l.Continue; opts.Continue == "" {
			break
		}
	}
	for _, e := range entries {
		if m, ok := byName[e.ref.Name]; ok {
			found(e, m)
		} else {
			e.miss = "not found"
		}
	}
	return nil
}

// collect fills set from the resolved entries: each found object deleted or kept, each
// other missing.
func collect(set *Set, entries []*entry) {
	seen := map[types.UID]bool{}
	for _, e := range entries {
		switch {
		case e.miss != "" && e.where != "":
			set.Missing = append(set.Missing, Miss{Object: e.ref, Reason: e.miss + " (" + e.where + ")"})
		case e.miss != "":
			set.Missing = append(set.Missing, Miss{Object: e.ref, Reason: e.miss})
		case seen[e.found.UID]:
		case e.keep != "":
			seen[e.found.UID] = true
			set.Kept = append(set.Kept, Kept{Object: e.found, Reason: e.keep})
		default:
			seen[e.found.UID] = true
			set.Objects = append(set.Objects, e.found)
		}
	}
}

func withTimeout[T any](ctx context.Context, d time.Duration, f func(context.Context) (T, error)) (T, error) {
	if d <= 0 {
		d = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return f(ctx)
}

// readError says which read failed, keeping the apiserver's status (Forbidden stays one).
func readError(err error, ref gc.ObjectRef) error {
	what := strings.TrimPrefix(ref.Kind+" "+ref.Namespace, " ")
	return fmt.Errorf("reading %s: %w", strings.TrimSpace(what), err)
}

// tooMany refuses a set of n entries.
func tooMany(n int, what string) error {
	return fmt.Errorf("%s names %d objects: at most %d may be predicted or deleted together", what, n, MaxObjects)
}

// LeftBehind lists what the tool leaves that the collector does not delete anyway (an
// object annotated keep whose owner goes is still deleted, by the collector: it is among
// p's Deleted).
func (s *Set) LeftBehind(p gc.Prediction) []deletion.LeftBehind {
	deleted := map[types.UID]bool{}
	for _, d := range p.Deleted {
		deleted[d.Object.UID] = true
	}
	var out []deletion.LeftBehind
	for _, k := range s.Kept {
		if !deleted[k.Object.UID] {
			out = append(out, deletion.LeftBehind{Object: k.Object, Reason: k.Reason})
		}
	}
	return out
}

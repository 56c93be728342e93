// Package access is what one user may read of a cluster: asked of the cluster
// (SubjectAccessReview, through a security.Authorizer) as kubectl would be, and
// remembered for one request or one stream client. A nil *Visibility sees everything.
package access

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/security"
)

// With --auth=kubernetes every read answers only what its user may list, as kubectl
// would: objects of a resource in a namespace are visible when a SubjectAccessReview says
// the user may `list` that resource there (or everywhere). Objects whose kind the cluster
// does not serve (owners named through an unknown kind, say) are visible only to users
// who may list everything. /metrics needs `get` on the non-resource URL /metrics, as the
// apiserver's own does.

// ErrTooBroad: settling would ask more questions than allowed.
var ErrTooBroad = errors.New("too many places to ask about")

// Visibility is what one user may read, for one request (or one stream client): its
// answers are memoized, so a 10,000-object graph costs one question per resource and
// namespace, not per object.
type Visibility struct {
	ctx    context.Context
	user   *security.User
	authz  security.Authorizer
	mapper meta.RESTMapper

	mu      sync.Mutex
	byKind  map[schema.GroupVersionKind]kindAccess
	byNS    map[nsKey]bool
	anyKind *bool     // may list everything (for kinds that do not map)
	failed  error     // the first authorization error: reads fail closed
	since   time.Time // when the answers above were asked (refresh)
	ttl     time.Duration
}

type kindAccess struct {
	gvr        schema.GroupVersionResource
	mapped     bool
	namespaced bool
	everywhere bool // may list it in all namespaces (or, cluster-scoped, at all)
}

type nsKey struct {
	gr schema.GroupResource
	ns string
}

func New(ctx context.Context, u *security.User, authz security.Authorizer, mapper meta.RESTMapper) *Visibility {
	return &Visibility{ctx: ctx, user: u, authz: authz, mapper: mapper,
		byKind: map[schema.GroupVersionKind]kindAccess{}, byNS: map[nsKey]bool{}, since: time.Now(), ttl: security.AccessCacheTTL}
}

// RefreshAfter sets how long answers are kept before Refresh asks them again
// (security.AccessCacheTTL by default), and returns v.
func (v *Visibility) RefreshAfter(d time.Duration) *Visibility {
	v.ttl = d
	return v
}

// Refresh asks every question again once the answers are older than security.AccessCacheTTL (a
// stream lives long; permissions change), and reports whether any answer changed.
func (v *Visibility) Refresh() (changed bool) {
	if v == nil {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if time.Since(v.since) < v.ttl {
		return false
	}
	v.since, v.failed = time.Now(), nil
	for gvk, old := range v.byKind {
		k := v.kindAccess(gvk)
		v.byKind[gvk] = k
		changed = changed || k != old
	}
	for key, old := range v.byNS {
		ok := v.ask(&authorizationv1.ResourceAttributes{Verb: "list", Group: key.gr.Group, Resource: key.gr.Resource, Namespace: key.ns})
		v.byNS[key] = ok
		changed = changed || ok != old
	}
	if v.anyKind != nil {
		old := *v.anyKind
		v.anyKind = nil
		changed = changed || v.mayListEverything() != old
	}
	return changed
}

// Visible reports whether the user may see the object of ref. A nil Visibility sees
// everything.
func (v *Visibility) Visible(ref gc.ObjectRef) bool {
	if v == nil {
		return true
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	k := v.kind(ref)
	switch {
	case !k.mapped:
		return v.mayListEverything()
	case k.everywhere:
		return true
	case !k.namespaced || ref.Namespace == "":
		return false
	}
	key := nsKey{gr: k.gvr.GroupResource(), ns: ref.Namespace}
	allowed, ok := v.byNS[key]
	if !ok {
		allowed = v.ask(&authorizationv1.ResourceAttributes{Verb: "list", Group: key.gr.Group, Resource: key.gr.Resource, Namespace: key.ns})
		v.byNS[key] = allowed
	}
	return allowed
}

// kind is what the user may list of ref's kind, asked once. Requires mu.
func (v *Visibility) kind(ref gc.ObjectRef) kindAccess {
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	k, ok := v.byKind[gvk]
	if !ok {
		k = v.kindAccess(gvk)
		v.byKind[gvk] = k
	}
	return k
}

// kindAccess maps gvk and asks whether the user may list it everywhere. Requires mu.
func (v *Visibility) kindAccess(gvk schema.GroupVersionKind) kindAccess {
	m, err := v.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return kindAccess{}
	}
	k := kindAccess{gvr: m.Resource, mapped: true, namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}
	k.everywhere = v.ask(&authorizationv1.ResourceAttributes{Verb: "list", Group: k.gvr.Group, Resource: k.gvr.Resource})
	return k
}

// Everything reports whether the user may list every resource everywhere.
func (v *Visibility) Everything() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.mayListEverything()
}

func (v *Visibility) mayListEverything() bool {
	if v.anyKind == nil {
		ok := v.ask(&authorizationv1.ResourceAttributes{Verb: "list", Group: "*", Resource: "*"})
		v.anyKind = &ok
	}
	return *v.anyKind
}

// ask asks the authorizer; an error denies (and is remembered). Requires mu.
func (v *Visibility) ask(res *authorizationv1.ResourceAttributes) bool {
	ok, err := v.authz.Allowed(v.ctx, v.user, res, nil)
	if err != nil && v.failed == nil {
		v.failed = err
	}
	return ok && err == nil
}

// func returns visible as a function for the engine (nil when everything is visible).
func (v *Visibility) Func() func(gc.ObjectRef) bool {
	if v == nil {
		return nil
	}
	return v.Visible
}

// Nodes keeps the visible nodes, their orphan marks redacted (nodes itself when v is nil).
func (v *Visibility) Nodes(nodes []gc.NodeState) []gc.NodeState {
	if v == nil {
		return nodes
	}
	out := make([]gc.NodeState, 0, min(len(nodes), 1024))
	for i := range nodes {
		if v.Visible(nodes[i].ObjectRef) {
			n, _ := nodes[i].RedactedFor(v.Visible) // a former owner it may not see is not named
			out = append(out, n)
		}
	}
	return out
}

// Refs keeps the visible refs, and counts the others.
func (v *Visibility) Refs(refs []gc.ObjectRef) ([]gc.ObjectRef, int) {
	if v == nil {
		return refs, 0
	}
	kept := slices.DeleteFunc(slices.Clone(refs), func(r gc.ObjectRef) bool { return !v.Visible(r) })
	return kept, len(refs) - len(kept)
}

// Err is the first error asking the authorizer gave (nil: every question was answered).
func (v *Visibility) Err() error {
	if v == nil {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.failed
}

// Queues narrows the queues' items and recent actions to what the user may see; the
// counters stay the whole queue's (they name nothing).
func (v *Visibility) Queues(qs []gc.QueueState) []gc.QueueState {
	if v == nil {
		return qs
	}
	out := make([]gc.QueueState, len(qs))
	for i, q := range qs {
		q.Items = slices.DeleteFunc(slices.Clone(q.Items), func(it gc.QueueItem) bool { return !v.Visible(it.Object) })
		q.Recent = slices.DeleteFunc(slices.Clone(q.Recent), func(a gc.Action) bool { return !v.Visible(a.Object) })
		for j := range q.Recent {
			q.Recent[j], _ = q.Recent[j].RedactedFor(v.Visible)
		}
		out[i] = q
	}
	return out
}

// Prediction leaves out of p the objects the user may not see, and counts them (each
// once, though an object can be in two lists).
func (v *Visibility) Prediction(p gc.Prediction) (gc.Prediction, int) {
	if v == nil {
		return p, 0
	}
	hidden := map[types.UID]bool{}
	keep := func(list []gc.PredictedObject) []gc.PredictedObject {
		return slices.DeleteFunc(slices.Clone(list), func(o gc.PredictedObject) bool {
			if v.Visible(o.Object) {
				return false
			}
			hidden[o.Object.UID] = true
			return true
		})
	}
	p.Deleted, p.Orphaned, p.Kept, p.Waiting, p.TargetWaitsFor = keep(p.Deleted), keep(p.Orphaned), keep(p.Kept), keep(p.Waiting), keep(p.TargetWaitsFor)
	return p, len(hidden)
}

// Settle asks, in order, whether the user may list each kind of places everywhere, then,
// for the kinds they may not, in each place's namespace: all of them, or, when that would
// take more than max reviews, none (ErrTooBroad).
func (v *Visibility) Settle(places []gc.ObjectRef, max int) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	var ask []nsKey
	for _, p := range places {
		switch k := v.kind(p); {
		case !k.mapped:
			v.mayListEverything()
		case k.everywhere || !k.namespaced || p.Namespace == "":
		default:
			key := nsKey{gr: k.gvr.GroupResource(), ns: p.Namespace}
			if _, ok := v.byNS[key]; !ok {
				ask = append(ask, key)
			}
		}
	}
	if len(ask) > max {
		return ErrTooBroad
	}
	for _, key := range ask {
		if _, ok := v.byNS[key]; !ok {
			v.byNS[key] = v.ask(&authorizationv1.ResourceAttributes{Verb: "list", Group: key.gr.Group, Resource: key.gr.Resource, Namespace: key.ns})
		}
	}
	return nil
}

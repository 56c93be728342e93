package server

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/security"

	"github.com/gcscope/gcscope/server/httpapi"
)

// With --auth=kubernetes every read answers only what its user may list, as kubectl
// would: objects of a resource in a namespace are visible when a SubjectAccessReview says
// the user may `list` that resource there (or everywhere). Objects whose kind the cluster
// does not serve (owners named through an unknown kind, say) are visible only to users
// who may list everything. /metrics needs `get` on the non-resource URL /metrics, as the
// apiserver's own does.

// visibility is what one user may read, for one request (or one stream client): its
// answers are memoized, so a 10,000-object graph costs one question per resource and
// namespace, not per object.
type visibility struct {
	ctx    context.Context
	user   *User
	authz  Authorizer
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

func newVisibility(ctx context.Context, u *User, authz Authorizer, mapper meta.RESTMapper) *visibility {
	return &visibility{ctx: ctx, user: u, authz: authz, mapper: mapper,
		byKind: map[schema.GroupVersionKind]kindAccess{}, byNS: map[nsKey]bool{}, since: time.Now(), ttl: security.AccessCacheTTL}
}

// refresh asks every question again once the answers are older than security.AccessCacheTTL (a
// stream lives long; permissions change), and reports whether any answer changed.
func (v *visibility) refresh() (changed bool) {
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

// visible reports whether the user may see the object of ref. A nil visibility sees
// everything.
func (v *visibility) visible(ref gc.ObjectRef) bool {
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
func (v *visibility) kind(ref gc.ObjectRef) kindAccess {
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	k, ok := v.byKind[gvk]
	if !ok {
		k = v.kindAccess(gvk)
		v.byKind[gvk] = k
	}
	return k
}

// kindAccess maps gvk and asks whether the user may list it everywhere. Requires mu.
func (v *visibility) kindAccess(gvk schema.GroupVersionKind) kindAccess {
	m, err := v.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return kindAccess{}
	}
	k := kindAccess{gvr: m.Resource, mapped: true, namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}
	k.everywhere = v.ask(&authorizationv1.ResourceAttributes{Verb: "list", Group: k.gvr.Group, Resource: k.gvr.Resource})
	return k
}

// everything reports whether the user may list every resource everywhere.
func (v *visibility) everything() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.mayListEverything()
}

func (v *visibility) mayListEverything() bool {
	if v.anyKind == nil {
		ok := v.ask(&authorizationv1.ResourceAttributes{Verb: "list", Group: "*", Resource: "*"})
		v.anyKind = &ok
	}
	return *v.anyKind
}

// ask asks the authorizer; an error denies (and is remembered). Requires mu.
func (v *visibility) ask(res *authorizationv1.ResourceAttributes) bool {
	ok, err := v.authz.Allowed(v.ctx, v.user, res, nil)
	if err != nil && v.failed == nil {
		v.failed = err
	}
	return ok && err == nil
}

// func returns visible as a function for the engine (nil when everything is visible).
func (v *visibility) fn() func(gc.ObjectRef) bool {
	if v == nil {
		return nil
	}
	return v.visible
}

// nodes keeps the visible nodes, their orphan marks redacted (nodes itself when v is nil).
func (v *visibility) nodes(nodes []gc.NodeState) []gc.NodeState {
	if v == nil {
		return nodes
	}
	out := make([]gc.NodeState, 0, min(len(nodes), 1024))
	for i := range nodes {
		if v.visible(nodes[i].ObjectRef) {
			n, _ := nodes[i].RedactedFor(v.visible) // a former owner it may not see is not named
			out = append(out, n)
		}
	}
	return out
}

// refs keeps the visible refs, and counts the others.
func (v *visibility) refs(refs []gc.ObjectRef) ([]gc.ObjectRef, int) {
	if v == nil {
		return refs, 0
	}
	kept := slices.DeleteFunc(slices.Clone(refs), func(r gc.ObjectRef) bool { return !v.visible(r) })
	return kept, len(refs) - len(kept)
}

// visibilityFor is what the request's user may read of c; nil when every user reads
// everything.
func (s *Server) visibilityFor(r *http.Request, c *served) *visibility {
	if c.Authorizer == nil {
		return nil
	}
	return newVisibility(r.Context(), userFrom(r), c.Authorizer, c.restMapper())
}

// err is the first error asking the authorizer gave (nil: every question was answered).
func (v *visibility) err() error {
	if v == nil {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.failed
}

// permissionsFailed answers 503 when the user's permissions could not be checked: an
// empty answer would look like "you may see nothing". Route groups have visibleReads
// do this; objectCtx, which also serves writes, asks itself.
func permissionsFailed(w http.ResponseWriter, v *visibility) bool {
	err := v.err()
	if err == nil {
		return false
	}
	writeUnchecked(w, err)
	return true
}

// uncheckedMessage is the message of the 503 for a request whose permissions the cluster
// could not answer (writeUnchecked), also for a write refused with an audit line.
func uncheckedMessage(err error) string {
	return "cannot check your permissions with the cluster: " + err.Error()
}

// writeUnchecked answers 503: the user's permissions could not be checked, and an answer
// without them would look like "you may see nothing" or "forbidden".
func writeUnchecked(w http.ResponseWriter, err error) {
	httpapi.WriteJSON(w, http.StatusServiceUnavailable, httpapi.ErrUnavailable(uncheckedMessage(err)))
}

// queues narrows the queues' items and recent actions to what the user may see; the
// counters stay the whole queue's (they name nothing).
func (v *visibility) queues(qs []gc.QueueState) []gc.QueueState {
	if v == nil {
		return qs
	}
	out := make([]gc.QueueState, len(qs))
	for i, q := range qs {
		q.Items = slices.DeleteFunc(slices.Clone(q.Items), func(it gc.QueueItem) bool { return !v.visible(it.Object) })
		q.Recent = slices.DeleteFunc(slices.Clone(q.Recent), func(a gc.Action) bool { return !v.visible(a.Object) })
		for j := range q.Recent {
			q.Recent[j], _ = q.Recent[j].RedactedFor(v.visible)
		}
		out[i] = q
	}
	return out
}

// prediction leaves out of p the objects the user may not see, and counts them (each
// once, though an object can be in two lists).
func (v *visibility) prediction(p gc.Prediction) (gc.Prediction, int) {
	if v == nil {
		return p, 0
	}
	hidden := map[types.UID]bool{}
	keep := func(list []gc.PredictedObject) []gc.PredictedObject {
		return slices.DeleteFunc(slices.Clone(list), func(o gc.PredictedObject) bool {
			if v.visible(o.Object) {
				return false
			}
			hidden[o.Object.UID] = true
			return true
		})
	}
	p.Deleted, p.Orphaned, p.Kept, p.Waiting, p.TargetWaitsFor = keep(p.Deleted), keep(p.Orphaned), keep(p.Kept), keep(p.Waiting), keep(p.TargetWaitsFor)
	return p, len(hidden)
}

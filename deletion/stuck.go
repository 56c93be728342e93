package deletion

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/gc"
)

// DefaultStuckAfter is how long a deletion may take before the stuck list names it.
const DefaultStuckAfter = 5 * time.Minute

// The causes of a stuck deletion.
const (
	CauseFinalizer   = "finalizer"   // another controller's finalizer holds it
	CauseForeground  = "foreground"  // its foreground deletion waits for blocking dependents
	CauseOrphan      = "orphan"      // the collector is orphaning its dependents first
	CauseNamespace   = "namespace"   // a namespace whose content is not all gone
	CauseDiscovery   = "discovery"   // a namespace the controller cannot empty: discovery fails
	CauseTermination = "termination" // a Pod waiting for its kubelet (graceful termination)
	CauseUnknown     = "unknown"
)

// maxStuckListed bounds the objects a group lists (all are counted).
const maxStuckListed = 100

// StuckReport is every object whose deletion started longer ago than OlderThan, by cause.
type StuckReport struct {
	OlderThan string    `json:"olderThan"`
	At        time.Time `json:"at"`
	// Total counts the stuck objects the reader may see; Hidden the others.
	Total  int          `json:"total"`
	Hidden int          `json:"hidden,omitempty"`
	Groups []StuckGroup `json:"groups"`
	// DiscoveryFailures are the group versions discovery cannot read now.
	DiscoveryFailures map[string]gc.GroupFailure `json:"discoveryFailures,omitempty"`
}

// StuckGroup is the stuck objects of one cause (and one finalizer, for CauseFinalizer).
type StuckGroup struct {
	Cause     string `json:"cause"`
	Finalizer string `json:"finalizer,omitempty"`
	// Says is the cause in words.
	Says string `json:"says"`
	// Origin says who added the finalizer (looked up on the group's oldest object).
	Origin  *FinalizerOrigin `json:"origin,omitempty"`
	Count   int              `json:"count"`
	Objects []StuckObject    `json:"objects"`
	More    int              `json:"more,omitempty"`
}

// StuckObject is one object stuck in deletion.
type StuckObject struct {
	Object     gc.ObjectRef `json:"object"`
	Since      time.Time    `json:"since"`
	ForSeconds int64        `json:"forSeconds"`
	Finalizers []string     `json:"finalizers,omitempty"`
	Detail     string       `json:"detail,omitempty"`
}

// classify says why an object being deleted is still there, from the graph alone; key is
// its finalizer for CauseFinalizer.
func classify(o gc.NodeState, discoveryFails bool) (cause, finalizer string) {
	held := gc.HeldBy(o.Finalizers)
	switch {
	case IsNamespace(o.ObjectRef) && discoveryFails:
		return CauseDiscovery, ""
	case IsNamespace(o.ObjectRef) && len(held) == 0:
		return CauseNamespace, ""
	case len(held) > 0:
		return CauseFinalizer, held[0]
	case o.DeletingDependents:
		return CauseForeground, ""
	case slices.Contains(o.Finalizers, metav1.FinalizerOrphanDependents):
		return CauseOrphan, ""
	case o.APIVersion == "v1" && o.Kind == "Pod":
		return CauseTermination, ""
	}
	return CauseUnknown, ""
}

func causeWords(cause, finalizer string) string {
	switch cause {
	case CauseFinalizer:
		return "held by finalizer " + finalizer + ": its controller must remove it"
	case CauseForeground:
		return "deleted in the foreground: waits for its blocking dependents to go"
	case CauseOrphan:
		return "the collector orphans its dependents before it goes"
	case CauseNamespace:
		return "a namespace the namespace controller is emptying: content is left"
	case CauseDiscovery:
		return "a namespace the namespace controller cannot empty: API discovery fails"
	case CauseTermination:
		return "a Pod waiting for its kubelet to stop its containers (or for a node that is gone)"
	}
	return "no finalizer and no dependents the engine knows of: the apiserver should have deleted it"
}

// Stuck lists the objects whose deletion started more than olderThan ago that the reader
// may see, by cause; each finalizer group says who added its finalizer (one GET on its
// oldest object) and whether its controller looks alive to the reader.
func (x *Explainer) Stuck(ctx context.Context, olderThan time.Duration, visible Visible) StuckReport {
	return x.stuck(ctx, olderThan, visible, visible)
}

// StuckIn is Stuck for a reader who sees everything, narrowed to namespace (its objects,
// and the Namespace itself): the kubectl plugin's, which reads with the user's own
// credentials.
func (x *Explainer) StuckIn(ctx context.Context, olderThan time.Duration, namespace string) StuckReport {
	r := x.stuck(ctx, olderThan, func(ref gc.ObjectRef) bool {
		return ref.Namespace == namespace || IsNamespace(ref) && ref.Name == namespace
	}, nil)
	r.Hidden = 0 // outside the namespace asked for, not hidden from the reader
	return r
}

// stuck lists the objects in (counting the others as hidden); visible is what the reader
// may see, for the verdicts.
func (x *Explainer) stuck(ctx context.Context, olderThan time.Duration, in, visible Visible) StuckReport {
	now := time.Now()
	sync := x.graph.SyncState()
	r := StuckReport{OlderThan: olderThan.String(), At: now, Groups: []StuckGroup{}, DiscoveryFailures: sync.DiscoveryFailures}
	groups := map[[2]string]*StuckGroup{}
	var stuck []gc.NodeState
	stuck, r.Hidden = x.stuckObjects(now, olderThan, in)
	r.Total = len(stuck)
	for _, o := range stuck {
		cause, f := classify(o, len(sync.DiscoveryFailures) > 0)
		g := groups[[2]string{cause, f}]
		if g == nil {
			g = &StuckGroup{Cause: cause, Finalizer: f, Says: causeWords(cause, f)}
			groups[[2]string{cause, f}] = g
		}
		g.Count++
		so := StuckObject{Object: o.ObjectRef, Since: *o.DeletionTimestamp, ForSeconds: int64(now.Sub(*o.DeletionTimestamp).Seconds()), Finalizers: o.Finalizers}
		if IsNamespace(o.ObjectRef) {
			so.Detail = objectsCount(len(x.graph.InNamespace(o.Name))) + " left"
		}
		g.Objects = append(g.Objects, so)
	}
	for _, g := range groups {
		// Oldest first; deletions of the same second (timestamps have seconds only) by name.
		slices.SortFunc(g.Objects, func(a, b StuckObject) int {
			return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.Object.Namespace, b.Object.Namespace),
				cmp.Compare(a.Object.Kind, b.Object.Kind), cmp.Compare(a.Object.Name, b.Object.Name))
		})
		if len(g.Objects) > maxStuckListed {
			g.More = len(g.Objects) - maxStuckListed
			g.Objects = g.Objects[:maxStuckListed]
		}
		r.Groups = append(r.Groups, *g)
	}
	slices.SortFunc(r.Groups, func(a, b StuckGroup) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Cause, b.Cause), cmp.Compare(a.Finalizer, b.Finalizer))
	})
	looked := 0
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.Cause == CauseFinalizer && looked < maxOrigins*2 {
			looked++
			o := x.Origin(ctx, g.Objects[0].Object, g.Finalizer, visible)
			g.Origin = &o
			if o.Manager != "" {
				g.Says = fmt.Sprintf("held by finalizer %s (added by %s): %s", g.Finalizer, o.Manager, o.Controller.Says)
			}
		}
	}
	return r
}

// CountStuck counts the objects Stuck would list, without looking anything up.
func (x *Explainer) CountStuck(olderThan time.Duration, visible Visible) int {
	stuck, _ := x.stuckObjects(time.Now(), olderThan, visible)
	return len(stuck)
}

// stuckObjects are the objects whose deletion started more than olderThan before now that
// the reader may see, and how many others there are.
func (x *Explainer) stuckObjects(now time.Time, olderThan time.Duration, visible Visible) (stuck []gc.NodeState, hidden int) {
	for _, o := range x.graph.BeingDeleted() {
		if o.DeletionTimestamp == nil || now.Sub(*o.DeletionTimestamp) < olderThan {
			continue
		}
		if !visible.sees(o.ObjectRef) {
			hidden++
			continue
		}
		stuck = append(stuck, o)
	}
	return stuck, hidden
}

package deletion

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gcscope/gcscope/gc"
)

// Report is what this package adds to the engine's explanation of one object.
type Report struct {
	// Namespace reports on a Namespace (its deletion, when it is Terminating).
	Namespace *NamespaceReport `json:"namespace,omitempty"`
	// Origins say who added each finalizer that holds the object (once it is being
	// deleted), in the order of the explanation's holds.
	Origins []FinalizerOrigin `json:"origins,omitempty"`
	// Discovery says how failing API discovery affects the object.
	Discovery []string `json:"discovery,omitempty"`
	// Error: the apiserver could not be asked (the rest of the explanation stands).
	Error string `json:"error,omitempty"`
}

// Explain adds to ex what the collector's graph cannot say: for a Namespace, its deletion
// as the namespace controller reports it; for an object held by finalizers, who added
// them; for any object, how failing discovery affects it. Nil when there is nothing to add.
func (x *Explainer) Explain(ctx context.Context, ex gc.Explanation, visible Visible) *Report {
	r := &Report{}
	if IsNamespace(ex.Object.ObjectRef) {
		ns, err := x.Namespace(ctx, ex.Object.Name, visible)
		if err != nil {
			r.Error = "cannot read the namespace: " + err.Error()
		} else {
			r.Namespace = &ns
		}
	}
	if ex.Object.BeingDeleted {
		for _, h := range ex.Holds {
			r.Origins = append(r.Origins, x.Origin(ctx, ex.Object.ObjectRef, h.Finalizer, visible))
		}
	}
	failures := x.graph.SyncState().DiscoveryFailures
	for _, o := range ex.Owners {
		gv, err := schema.ParseGroupVersion(o.APIVersion)
		if err != nil {
			continue
		}
		if f, ok := failures[gv.String()]; ok {
			r.Discovery = append(r.Discovery, "owner "+o.Kind+" "+o.Name+" is of API group "+gv.String()+", which discovery cannot read since "+f.Since.Format(time.TimeOnly)+": "+f.Error)
		}
	}
	if r.Namespace == nil && r.Origins == nil && r.Discovery == nil && r.Error == "" {
		return nil
	}
	return r
}

// Amend puts r's say into ex: a Terminating namespace waits for the namespace
// controller, not the collector, so its next and words replace the engine's; words about
// failing discovery are added.
func (r *Report) Amend(ex *gc.Explanation) {
	if r == nil {
		return
	}
	if ns := r.Namespace; ns != nil && ns.DeletionTimestamp != nil {
		ex.Next, ex.Words = ns.Next, slices.Clone(ns.Words)
	}
	ex.Words = append(ex.Words, r.Discovery...)
}

// originTTL is how long a finalizer's origin is reused: the page asks for an explanation
// every second while a panel is open. maxOriginsKept bounds the origins remembered.
const (
	originTTL      = 10 * time.Second
	maxOriginsKept = 1024
)

type originKey struct {
	uid       string
	finalizer string
}

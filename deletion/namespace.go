package deletion

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/gc"
)

// The conditions the namespace controller sets on a namespace it is deleting
// (k8s.io/api/core/v1), in the order a reader should look at them.
var namespaceConditions = []corev1.NamespaceConditionType{
	corev1.NamespaceDeletionDiscoveryFailure,
	corev1.NamespaceDeletionGVParsingFailure,
	corev1.NamespaceDeletionContentFailure,
	corev1.NamespaceContentRemaining,
	corev1.NamespaceFinalizersRemaining,
}

// namespaceFinalizer is the namespace controller's spec finalizer: it removes it once the
// namespace's content is gone.
const namespaceFinalizer = string(corev1.FinalizerKubernetes)

// maxHolders bounds the objects a report lists as holding a namespace (they are counted
// by kind all the same), and maxOrigins the finalizers whose origin it looks up (one GET
// each).
const (
	maxHolders = 50
	maxOrigins = 5
)

// NamespaceReport is a namespace's deletion as the namespace controller reports it, with
// what the engine's graph says is left in it.
type NamespaceReport struct {
	Name  string `json:"name"`
	Phase string `json:"phase"`
	// DeletionTimestamp is when its deletion started (nil: not being deleted).
	DeletionTimestamp *time.Time `json:"deletionTimestamp,omitempty"`
	// Finalizers are its spec.finalizers: "kubernetes" is the namespace controller's,
	// removed once the content is gone; others are other controllers'.
	Finalizers []string `json:"finalizers,omitempty"`
	// MetadataFinalizers are its metadata.finalizers (other controllers').
	MetadataFinalizers []string `json:"metadataFinalizers,omitempty"`
	// Conditions are the namespace controller's, in the order to read them.
	Conditions []Condition `json:"conditions,omitempty"`
	Content    Content     `json:"content"`
	// DiscoveryFailures are the group versions discovery cannot read now; while any
	// fails, the namespace controller cannot finish deleting any namespace.
	DiscoveryFailures map[string]gc.GroupFailure `json:"discoveryFailures,omitempty"`
	// APIServices are the aggregated APIs at fault, when discovery fails.
	APIServices []APIServiceReport `json:"apiServices,omitempty"`
	// Next is the one thing that would unblock it; Words say why.
	Next  string   `json:"next"`
	Words []string `json:"words"`
}

// Condition is one status condition of a namespace.
type Condition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
	LastTransitionTime time.Time `json:"lastTransitionTime"`
}

// Content is what is left in a namespace, as the engine's graph holds it (events are not
// watched, so not counted).
type Content struct {
	// Total counts the objects left that the reader may see; Hidden the others.
	Total  int `json:"total"`
	Hidden int `json:"hidden,omitempty"`
	// ByKind counts them by kind, most first.
	ByKind []KindCount `json:"byKind"`
	// Holders are the objects left that finalizers hold (at most maxHolders; MoreHolders
	// counts the rest), oldest deletion first.
	Holders     []Holder `json:"holders,omitempty"`
	MoreHolders int      `json:"moreHolders,omitempty"`
	// Origins say who added the holders' finalizers (one per finalizer, looked up on one
	// holder each).
	Origins []FinalizerOrigin `json:"origins,omitempty"`
}

// KindCount counts the objects of one kind left in a namespace.
type KindCount struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Count      int    `json:"count"`
	// BeingDeleted have a deletionTimestamp; Held of those have finalizers.
	BeingDeleted int `json:"beingDeleted,omitempty"`
	Held         int `json:"held,omitempty"`
}

// Holder is an object left in a namespace that finalizers hold.
type Holder struct {
	Object       gc.ObjectRef `json:"object"`
	Finalizers   []string     `json:"finalizers"`
	BeingDeleted bool         `json:"beingDeleted,omitempty"`
	// Since is its deletionTimestamp.
	Since *time.Time `json:"since,omitempty"`
}

// Condition returns the condition of type t, if the report has it.
func (r NamespaceReport) Condition(t corev1.NamespaceConditionType) (Condition, bool) {
	for _, c := range r.Conditions {
		if c.Type == string(t) {
			return c, true
		}
	}
	return Condition{}, false
}

// Namespace reports on the namespace name: one GET of it, the engine's graph for its
// content, and, when discovery fails, the APIServices at fault.
func (x *Explainer) Namespace(ctx context.Context, name string, visible Visible) (NamespaceReport, error) {
	ns, err := x.kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return NamespaceReport{}, err
	}
	r := NamespaceReport{Name: name, Phase: string(ns.Status.Phase), MetadataFinalizers: ns.Finalizers}
	if ns.DeletionTimestamp != nil {
		t := ns.DeletionTimestamp.Time
		r.DeletionTimestamp = &t
	}
	for _, f := range ns.Spec.Finalizers {
		r.Finalizers = append(r.Finalizers, string(f))
	}
	for _, t := range namespaceConditions {
		for _, c := range ns.Status.Conditions {
			if c.Type == t {
				r.Conditions = append(r.Conditions, Condition{Type: string(c.Type), Status: string(c.Status),
					Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime.Time})
			}
		}
	}
	r.Content = contentOf(x.graph.InNamespace(name), visible)
	if r.DeletionTimestamp != nil {
		r.Content.Origins = x.originsOf(ctx, r.Content.Holders, visible)
	}
	r.DiscoveryFailures = x.graph.SyncState().DiscoveryFailures
	if c, ok := r.Condition(corev1.NamespaceDeletionDiscoveryFailure); ok && c.Status == string(corev1.ConditionTrue) || len(r.DiscoveryFailures) > 0 {
		r.APIServices = x.APIServices(ctx, r.DiscoveryFailures, visible)
	}
	r.Next, r.Words = r.narrate()
	return r, nil
}

// contentOf counts the objects of a namespace and lists those finalizers hold.
func contentOf(objects []gc.NodeState, visible Visible) Content {
	c := Content{ByKind: []KindCount{}}
	byKind := map[[2]string]*KindCount{}
	var holders []Holder
	for _, o := range objects {
		if !visible.sees(o.ObjectRef) {
			c.Hidden++
			continue
		}
		c.Total++
		k := byKind[[2]string{o.APIVersion, o.Kind}]
		if k == nil {
			k = &KindCount{APIVersion: o.APIVersion, Kind: o.Kind}
			byKind[[2]string{o.APIVersion, o.Kind}] = k
		}
		k.Count++
		if o.BeingDeleted {
			k.BeingDeleted++
		}
		if len(o.Finalizers) > 0 {
			if o.BeingDeleted {
				k.Held++
			}
			holders = append(holders, Holder{Object: o.ObjectRef, Finalizers: o.Finalizers, BeingDeleted: o.BeingDeleted, Since: o.DeletionTimestamp})
		}
	}
	for _, k := range byKind {
		c.ByKind = append(c.ByKind, *k)
	}
	slices.SortFunc(c.ByKind, func(a, b KindCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.APIVersion, b.APIVersion))
	})
	// Held ones first (their deletion started and they stay), oldest first.
	slices.SortStableFunc(holders, func(a, b Holder) int {
		switch {
		case a.BeingDeleted != b.BeingDeleted:
			if a.BeingDeleted {
				return -1
			}
			return 1
		case a.Since != nil && b.Since != nil && !a.Since.Equal(*b.Since):
			return a.Since.Compare(*b.Since)
		}
		return cmp.Or(cmp.Compare(a.Object.Kind, b.Object.Kind), cmp.Compare(a.Object.Name, b.Object.Name))
	})
	if len(holders) > maxHolders {
		c.MoreHolders = len(holders) - maxHolders
		holders = holders[:maxHolders]
	}
	c.Holders = holders
	return c
}

// originsOf looks up who added each distinct finalizer of the holders, on its first holder.
func (x *Explainer) originsOf(ctx context.Context, holders []Holder, visible Visible) []FinalizerOrigin {
	var out []FinalizerOrigin
	seen := map[string]bool{}
	for _, h := range holders {
		for _, f := range h.Finalizers {
			if seen[f] || len(out) >= maxOrigins {
				continue
			}
			seen[f] = true
			out = append(out, x.Origin(ctx, h.Object, f, visible))
		}
	}
	return out
}

// narrate says the one thing that would unblock the namespace, and why.
func (r NamespaceReport) narrate() (next string, words []string) {
	words = []string{}
	if r.DeletionTimestamp == nil {
		return "nothing: the namespace is not being deleted", append(words,
			fmt.Sprintf("it holds %s", objectsCount(r.Content.Total+r.Content.Hidden)))
	}
	if slices.Contains(r.Finalizers, namespaceFinalizer) {
		words = append(words, "its spec finalizer kubernetes keeps it until the namespace controller has deleted everything in it")
	}
	for _, c := range r.Conditions {
		if c.Status == string(corev1.ConditionTrue) {
			words = append(words, c.Type+": "+c.Message)
		}
	}
	if c, ok := r.Condition(corev1.NamespaceDeletionDiscoveryFailure); ok && c.Status == string(corev1.ConditionTrue) || len(r.DiscoveryFailures) > 0 && slices.Contains(r.Finalizers, namespaceFinalizer) {
		for _, a := range r.APIServices {
			if a.Problem != "" {
				return "make " + a.Name + " available again: " + a.Next, append(words,
					"the namespace controller cannot list every API group, so it cannot be sure the namespace is empty: "+a.Name+" is unavailable ("+a.Problem+")")
			}
		}
		gvs := make([]string, 0, len(r.DiscoveryFailures))
		for gv := range r.DiscoveryFailures {
			gvs = append(gvs, gv)
		}
		slices.Sort(gvs)
		if len(gvs) > 0 {
			return "make the API group version " + strings.Join(gvs, ", ") + " discoverable again (its aggregated API or its APIService)", words
		}
		return "make API discovery succeed again: " + c.Message, words
	}
	if c, ok := r.Condition(corev1.NamespaceDeletionGVParsingFailure); ok && c.Status == string(corev1.ConditionTrue) {
		return "fix the API group version the namespace controller cannot parse: " + c.Message, words
	}
	if c, ok := r.Condition(corev1.NamespaceDeletionContentFailure); ok && c.Status == string(corev1.ConditionTrue) {
		return "let the namespace controller delete the content (it is refused): " + c.Message, words
	}
	var held []Holder
	for _, h := range r.Content.Holders {
		if h.BeingDeleted {
			held = append(held, h)
		}
	}
	if len(held) > 0 {
		f := held[0].Finalizers[0]
		n := 0
		for _, h := range held {
			if slices.Contains(h.Finalizers, f) {
				n++
			}
		}
		by := ""
		for _, o := range r.Content.Origins {
			if o.Finalizer == f && o.Manager != "" {
				by = " (added by " + o.Manager + ")"
			}
		}
		words = append(words, fmt.Sprintf("%s left, %d held by finalizers", objectsCount(r.Content.Total+r.Content.Hidden), len(held)+r.Content.MoreHolders))
		return fmt.Sprintf("finalizer %s%s must be removed from %s: %s", f, by, objectsCount(n), describe(held[0].Object)), words
	}
	if left := r.Content.Total + r.Content.Hidden; left > 0 {
		return fmt.Sprintf("the namespace controller deletes the %s left (Pods first, then the rest)", objectsCount(left)), words
	}
	var others []string
	for _, f := range r.Finalizers {
		if f != namespaceFinalizer {
			others = append(others, f)
		}
	}
	others = append(others, r.MetadataFinalizers...)
	if len(others) > 0 {
		return "the controller of finalizer " + strings.Join(others, ", ") + " must remove it: the namespace is empty", words
	}
	return "the namespace controller removes the kubernetes finalizer, and the apiserver deletes the namespace", words
}

func objectsCount(n int) string {
	if n == 1 {
		return "1 object"
	}
	return fmt.Sprintf("%d objects", n)
}

func describe(o gc.ObjectRef) string {
	if o.Namespace != "" {
		return o.Kind + " " + o.Namespace + "/" + o.Name
	}
	return o.Kind + " " + o.Name
}

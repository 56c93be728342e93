package deletion

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gcscope/gcscope/gc"
)

// Liveness says whether a controller looks alive, and what that rests on.
type Liveness struct {
	// State: "alive" (a workload that plausibly is it is ready, or a Lease of its is
	// renewed), "down" (found, but nothing ready and no Lease renewed), "none" (nothing
	// found that plausibly is it) or "unknown" (gcscope cannot tell).
	State    string     `json:"state"`
	Says     string     `json:"says"`
	Evidence []Evidence `json:"evidence,omitempty"`
}

// Evidence is one object that plausibly is the controller, and what it shows.
type Evidence struct {
	Object gc.ObjectRef `json:"object"`
	Detail string       `json:"detail"`
}

const (
	Alive   = "alive"
	Down    = "down"
	None    = "none"
	Unknown = "unknown"
)

// A verdict rests only on objects its reader may see. gcscope reads the cluster with its
// own credentials; were the verdict built from all it read, a user of one namespace could
// learn, finalizer name by finalizer name, what runs in the others ("alive" or "none").
// So the evidence is narrowed to what the reader may list first, and the verdict drawn
// from what is left: "none" only for a reader who may list every kind looked at in every
// namespace, "unknown" for the others when nothing they may see matches. And what the
// reader may see is asked before anything is matched, of the same few things whatever
// matches: each kind everywhere, and in the held object's namespace. A reader who may
// not list a kind everywhere is shown its matches in that namespace only. (Asked per
// match, a name found in 300 hidden namespaces cost 300 access reviews and 4 s, and told
// that it exists.)

// genericWords name no controller in particular: a workload is not matched on them.
var genericWords = []string{"controller", "manager", "operator", "webhook", "system", "kube", "k8s", "kubernetes", "io", "com", "org", "net", "dev", "example", "finalizer", "cleanup", "protection", "apps", "cluster"}

// handTools are field managers that are people, not controllers.
var handTools = []string{"kubectl", "kubectl-patch", "kubectl-edit", "kubectl-client-side-apply", "kubectl-replace", "kubectl-create", "kubectl-label", "kubectl-annotate", "helm"}

// controllerKinds are the kinds the index holds; a reader who may list all of them
// everywhere may be told that nothing is found.
var controllerKinds = []gc.ObjectRef{
	{APIVersion: "apps/v1", Kind: "Deployment"},
	{APIVersion: "apps/v1", Kind: "StatefulSet"},
	{APIVersion: "apps/v1", Kind: "DaemonSet"},
	{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
}

// controllerOf says whether the controller of finalizer f, added by manager, to an object
// in namespace near, looks alive to a reader who sees what visible says.
func (x *Explainer) controllerOf(ctx context.Context, manager, f, near string, visible Visible) Liveness {
	kcm := builtIn(f) || manager == "kube-controller-manager"
	tokens := tokensOf(manager, f)
	if !kcm && len(tokens) == 0 {
		return Liveness{State: Unknown, Says: "cannot tell: neither the finalizer nor its field manager names a controller to look for"}
	}
	ix, ok := x.controllers.get(ctx, struct{}{}, x.listControllers)
	if !ok {
		return Liveness{State: Unknown, Says: "cannot tell: the look-up was cancelled"}
	}
	if kcm {
		return ix.kubeControllerManager(visible, time.Now())
	}
	return ix.liveness(tokens, manager, f, near, visible, time.Now())
}

// builtIn reports whether f is a finalizer of a Kubernetes component.
func builtIn(f string) bool {
	if f == namespaceFinalizer {
		return true
	}
	prefix, _, ok := strings.Cut(f, "/")
	return ok && (prefix == "kubernetes.io" || strings.HasSuffix(prefix, ".kubernetes.io"))
}

// tokensOf are the words that name the controller: the field manager's, and the first
// label of the finalizer's domain ("acme" of acme.example.com/cleanup), without generic
// words, at least three characters long.
func tokensOf(manager, f string) []string {
	var words []string
	if manager != "" && !slices.Contains(handTools, manager) && !strings.HasPrefix(manager, "kubectl") {
		words = append(words, strings.ToLower(manager))
		words = append(words, strings.FieldsFunc(strings.ToLower(manager), func(r rune) bool { return r == '-' || r == '_' || r == '.' || r == '/' })...)
	}
	if domain, _, ok := strings.Cut(f, "/"); ok {
		first, _, _ := strings.Cut(strings.ToLower(domain), ".")
		words = append(words, first)
	}
	var out []string
	for _, w := range words {
		if len(w) >= 3 && !slices.Contains(genericWords, w) && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return out
}

// liveness matches tokens against the index, keeps what the reader may see, and draws
// the verdict from that.
func (ix *controllerIndex) liveness(tokens []string, manager, f, near string, visible Visible, now time.Time) Liveness {
	runs := make([][]string, len(tokens))
	for i, t := range tokens {
		runs[i] = wordsOf(t)
	}
	// What the reader may see, asked before matching: every kind everywhere, or in near.
	everywhere, nearby := map[string]bool{}, map[string]bool{}
	for _, k := range controllerKinds {
		everywhere[k.Kind] = visible.sees(k)
		nearby[k.Kind] = everywhere[k.Kind] || near != "" && visible.sees(gc.ObjectRef{APIVersion: k.APIVersion, Kind: k.Kind, Namespace: near})
	}
	var ev []Evidence
	ready := 0
	for i := range ix.candidates {
		c := &ix.candidates[i]
		if !everywhere[c.ref.Kind] && (c.ref.Namespace != near || !nearby[c.ref.Kind]) || !c.matches(runs) {
			continue
		}
		e, up := c.evidence(now)
		ev = append(ev, e)
		if up {
			ready++
		}
	}
	what := "for " + strings.Join(tokens, " or ")
	switch {
	case ready > 0:
		return Liveness{State: Alive, Says: "a controller that plausibly is it is running (matched by name " + what + "): it should remove the finalizer once its clean-up is done", Evidence: ev}
	case len(ev) > 0:
		return Liveness{State: Down, Says: "found what plausibly is its controller (by name " + what + "), but nothing of it is ready or renewing its Lease: it cannot remove the finalizer", Evidence: ev}
	case !slices.ContainsFunc(controllerKinds, func(k gc.ObjectRef) bool { return !everywhere[k.Kind] }):
		// The reader may list every kind looked at, everywhere: what gcscope could not read
		// is all that is left to say.
	default:
		return Liveness{State: Unknown, Says: "cannot tell: the objects that would tell (Deployments, StatefulSets, DaemonSets and Leases in every namespace) are not all visible to you, and none you may see is named " + what}
	}
	switch {
	case ix.failed == len(controllerKinds):
		return Liveness{State: Unknown, Says: "cannot tell: gcscope may not list Deployments, StatefulSets, DaemonSets or Leases"}
	case ix.failed > 0 || ix.truncated > 0:
		return Liveness{State: Unknown, Says: "cannot tell: nothing found named " + what + ", but gcscope could not read every Deployment, StatefulSet, DaemonSet and Lease"}
	}
	domain, _, _ := strings.Cut(f, "/")
	if domain == f {
		domain = manager
	}
	return Liveness{State: None, Says: fmt.Sprintf("no running controller found for %s (no Deployment, StatefulSet, DaemonSet or Lease named %s): nothing will remove the finalizer unless it is installed again", domain, what)}
}

// kubeControllerManager says whether kube-controller-manager looks alive, by its leader
// election Lease.
func (ix *controllerIndex) kubeControllerManager(visible Visible, now time.Time) Liveness {
	const component = "a Kubernetes component removes it (kube-controller-manager for most)"
	c, ok := ix.find("Lease", "kube-system", "kube-controller-manager")
	switch {
	case ok && !visible.sees(c.ref), !ok && !visible.sees(gc.ObjectRef{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: "kube-system", Name: "kube-controller-manager"}):
		return Liveness{State: Unknown, Says: component + "; cannot tell whether it runs: its leader-election Lease kube-system/kube-controller-manager is not visible to you"}
	case !ok:
		return Liveness{State: Unknown, Says: component + "; cannot tell whether it runs: it has no leader-election Lease kube-system/kube-controller-manager (it may run without leader election)"}
	}
	e, fresh := c.evidence(now)
	if fresh {
		return Liveness{State: Alive, Says: "kube-controller-manager is running (its Lease is renewed)", Evidence: []Evidence{e}}
	}
	return Liveness{State: Down, Says: "kube-controller-manager's Lease is not renewed: it may not be running", Evidence: []Evidence{e}}
}

// leaseFresh reports whether a Lease was renewed within twice its duration.
func leaseFresh(renew *time.Time, d time.Duration, now time.Time) (bool, string) {
	if renew == nil {
		return false, "never renewed"
	}
	ago := now.Sub(*renew).Round(time.Second)
	return ago <= 2*d, fmt.Sprintf("renewed %s ago", ago)
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

package deletion

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// livenessTTL is how long a look-up is reused: an explanation refreshed every second must
// not list the cluster's workloads every second.
const livenessTTL = 10 * time.Second

type livenessCache struct {
	mu   sync.Mutex
	seen map[string]cachedLiveness
	now  func() time.Time
}

type cachedLiveness struct {
	l  Liveness
	at time.Time
}

func newLivenessCache() *livenessCache {
	return &livenessCache{seen: map[string]cachedLiveness{}, now: time.Now}
}

// genericWords name no controller in particular: a workload is not matched on them.
var genericWords = []string{"controller", "manager", "operator", "webhook", "system", "kube", "k8s", "kubernetes", "io", "com", "org", "net", "dev", "example", "finalizer", "cleanup", "protection", "apps", "cluster"}

// handTools are field managers that are people, not controllers.
var handTools = []string{"kubectl", "kubectl-patch", "kubectl-edit", "kubectl-client-side-apply", "kubectl-replace", "kubectl-create", "kubectl-label", "kubectl-annotate", "helm"}

// lookup finds what plausibly is the controller of finalizer f added by manager.
func (c *livenessCache) lookup(ctx context.Context, x *Explainer, manager, f string, visible Visible) Liveness {
	if builtIn(f) || manager == "kube-controller-manager" {
		return x.kubeControllerManager(ctx, f)
	}
	tokens := tokensOf(manager, f)
	if len(tokens) == 0 {
		return Liveness{State: Unknown, Says: "cannot tell: neither the finalizer nor its field manager names a controller to look for"}
	}
	key := strings.Join(tokens, ",")
	c.mu.Lock()
	if e, ok := c.seen[key]; ok && c.now().Sub(e.at) < livenessTTL {
		c.mu.Unlock()
		return filterEvidence(e.l, visible)
	}
	c.mu.Unlock()
	l := x.findController(ctx, tokens, manager, f)
	c.mu.Lock()
	c.seen[key] = cachedLiveness{l: l, at: c.now()}
	c.mu.Unlock()
	return filterEvidence(l, visible)
}

// filterEvidence leaves out evidence the reader may not see; the verdict stays (it names
// nothing hidden once the evidence is gone).
func filterEvidence(l Liveness, visible Visible) Liveness {
	if visible == nil {
		return l
	}
	var kept []Evidence
	for _, e := range l.Evidence {
		if visible(e.Object) {
			kept = append(kept, e)
		}
	}
	if len(kept) < len(l.Evidence) {
		l.Says = strings.TrimSuffix(l.Says, ".") + fmt.Sprintf(" (%d of the objects it rests on you may not see)", len(l.Evidence)-len(kept))
	}
	l.Evidence = kept
	return l
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

// findController looks for Deployments, StatefulSets, DaemonSets and Leases whose names
// contain one of tokens.
func (x *Explainer) findController(ctx context.Context, tokens []string, manager, f string) Liveness {
	matches := func(name string) bool {
		name = strings.ToLower(name)
		return slices.ContainsFunc(tokens, func(t string) bool { return strings.Contains(name, t) })
	}
	var ev []Evidence
	ready, failed := 0, 0
	add := func(ref gc.ObjectRef, want, have int32) {
		ev = append(ev, Evidence{Object: ref, Detail: fmt.Sprintf("%d of %d ready", have, want)})
		if have > 0 {
			ready++
		}
	}
	apps := x.kube.AppsV1()
	if l, err := apps.Deployments("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, d := range l.Items {
			if matches(d.Name) {
				add(gc.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: d.Namespace, Name: d.Name, UID: d.UID}, ptrOr(d.Spec.Replicas, 1), d.Status.ReadyReplicas)
			}
		}
	} else {
		failed++
	}
	if l, err := apps.StatefulSets("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, s := range l.Items {
			if matches(s.Name) {
				add(gc.ObjectRef{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: s.Namespace, Name: s.Name, UID: s.UID}, ptrOr(s.Spec.Replicas, 1), s.Status.ReadyReplicas)
			}
		}
	} else {
		failed++
	}
	if l, err := apps.DaemonSets("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, d := range l.Items {
			if matches(d.Name) {
				add(gc.ObjectRef{APIVersion: "apps/v1", Kind: "DaemonSet", Namespace: d.Namespace, Name: d.Name, UID: d.UID}, d.Status.DesiredNumberScheduled, d.Status.NumberReady)
			}
		}
	} else {
		failed++
	}
	if l, err := x.kube.CoordinationV1().Leases("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, le := range l.Items {
			holder := ""
			if le.Spec.HolderIdentity != nil {
				holder = *le.Spec.HolderIdentity
			}
			if !matches(le.Name) && !matches(holder) {
				continue
			}
			ref := gc.ObjectRef{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: le.Namespace, Name: le.Name, UID: le.UID}
			if fresh, detail := leaseFresh(le.Spec.RenewTime, le.Spec.LeaseDurationSeconds, time.Now()); fresh {
				ready++
				ev = append(ev, Evidence{Object: ref, Detail: detail})
			} else {
				ev = append(ev, Evidence{Object: ref, Detail: detail})
			}
		}
	} else {
		failed++
	}
	what := "for " + strings.Join(tokens, " or ")
	switch {
	case ready > 0:
		return Liveness{State: Alive, Says: "a controller that plausibly is it is running (matched by name " + what + "): it should remove the finalizer once its clean-up is done", Evidence: ev}
	case len(ev) > 0:
		return Liveness{State: Down, Says: "found what plausibly is its controller (by name " + what + "), but nothing of it is ready or renewing its Lease: it cannot remove the finalizer", Evidence: ev}
	case failed == 4:
		return Liveness{State: Unknown, Says: "cannot tell: gcscope may not list Deployments, StatefulSets, DaemonSets or Leases"}
	}
	domain, _, _ := strings.Cut(f, "/")
	if domain == f {
		domain = manager
	}
	return Liveness{State: None, Says: fmt.Sprintf("no running controller found for %s (no Deployment, StatefulSet, DaemonSet or Lease named %s): nothing will remove the finalizer unless it is installed again", domain, what)}
}

// kubeControllerManager says whether kube-controller-manager looks alive, by its leader
// election Lease.
func (x *Explainer) kubeControllerManager(ctx context.Context, f string) Liveness {
	le, err := x.kube.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
	if err != nil {
		return Liveness{State: Unknown, Says: "a Kubernetes component removes it (kube-controller-manager for most); cannot tell whether it runs: it has no leader-election Lease kube-system/kube-controller-manager (it may run without leader election)"}
	}
	ref := gc.ObjectRef{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: le.Namespace, Name: le.Name, UID: le.UID}
	fresh, detail := leaseFresh(le.Spec.RenewTime, le.Spec.LeaseDurationSeconds, time.Now())
	if fresh {
		return Liveness{State: Alive, Says: "kube-controller-manager is running (its Lease is renewed)", Evidence: []Evidence{{Object: ref, Detail: detail}}}
	}
	return Liveness{State: Down, Says: "kube-controller-manager's Lease is not renewed: it may not be running", Evidence: []Evidence{{Object: ref, Detail: detail}}}
}

// leaseFresh reports whether a Lease was renewed within twice its duration.
func leaseFresh(renew *metav1.MicroTime, seconds *int32, now time.Time) (bool, string) {
	if renew == nil {
		return false, "never renewed"
	}
	d := 15 * time.Second
	if seconds != nil {
		d = time.Duration(*seconds) * time.Second
	}
	ago := now.Sub(renew.Time).Round(time.Second)
	return ago <= 2*d, fmt.Sprintf("renewed %s ago", ago)
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

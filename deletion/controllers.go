package deletion

import (
	"context"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/gc"
)

// The controllers a finalizer may belong to are looked for among the cluster's
// Deployments, StatefulSets, DaemonSets and Leases. They are read into one shared index,
// listed in pages with gcscope's credentials at most once per controllersTTL and only when
// a look-up needs them: however many explanations and stuck lists are asked for, the
// cluster is listed four times a period. The index keeps a few words per object, not the
// objects, and at most maxIndexedPerKind of each kind.

const (
	controllersTTL    = 30 * time.Second
	maxIndexedPerKind = 20000
	listPageSize      = 500
)

// controllerIndex is every object that may be a controller, as listed at one moment.
type controllerIndex struct {
	candidates []candidate
	// failed counts the kinds gcscope could not list; truncated, those it listed only
	// maxIndexedPerKind of.
	failed, truncated int
}

// candidate is one Deployment, StatefulSet, DaemonSet or Lease.
type candidate struct {
	ref gc.ObjectRef
	// names are its name, a Lease's holder and its app labels, each split into words:
	// a controller is matched on whole words, never on a part of one.
	names [][]string
	// want and have are a workload's replicas and ready replicas; a Lease has renewed
	// and duration instead.
	want, have int32
	lease      bool
	renewed    *time.Time
	duration   time.Duration
}

// appLabels name the application a workload runs.
var appLabels = []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app", "k8s-app"}

// nodeLeases are the kubelets' heartbeats, one per node: never a controller.
const nodeLeases = "kube-node-lease"

// listControllers reads the index (communicates with the server: four paged LISTs).
func (x *Explainer) listControllers(ctx context.Context) *controllerIndex {
	ix := &controllerIndex{}
	apps := x.kube.AppsV1()
	type lister func(opts metav1.ListOptions) (cont string, err error)
	pages := func(list lister) {
		opts := metav1.ListOptions{Limit: listPageSize}
		start := len(ix.candidates)
		for {
			cont, err := list(opts)
			if err != nil {
				ix.failed++
				return
			}
			if len(ix.candidates)-start >= maxIndexedPerKind {
				ix.candidates = ix.candidates[:start+maxIndexedPerKind]
				ix.truncated++
				return
			}
			if cont == "" {
				return
			}
			opts.Continue = cont
		}
	}
	workload := func(ref gc.ObjectRef, m metav1.ObjectMeta, want, have int32) {
		ix.candidates = append(ix.candidates, candidate{ref: ref, names: namesOf(m.Name, "", m.Labels), want: want, have: have})
	}
	pages(func(opts metav1.ListOptions) (string, error) {
		l, err := apps.Deployments("").List(ctx, opts)
		if err != nil {
			return "", err
		}
		for _, d := range l.Items {
			workload(gc.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: d.Namespace, Name: d.Name, UID: d.UID}, d.ObjectMeta, ptrOr(d.Spec.Replicas, 1), d.Status.ReadyReplicas)
		}
		return l.Continue, nil
	})
	pages(func(opts metav1.ListOptions) (string, error) {
		l, err := apps.StatefulSets("").List(ctx, opts)
		if err != nil {
			return "", err
		}
		for _, s := range l.Items {
			workload(gc.ObjectRef{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: s.Namespace, Name: s.Name, UID: s.UID}, s.ObjectMeta, ptrOr(s.Spec.Replicas, 1), s.Status.ReadyReplicas)
		}
		return l.Continue, nil
	})
	pages(func(opts metav1.ListOptions) (string, error) {
		l, err := apps.DaemonSets("").List(ctx, opts)
		if err != nil {
			return "", err
		}
		for _, d := range l.Items {
			workload(gc.ObjectRef{APIVersion: "apps/v1", Kind: "DaemonSet", Namespace: d.Namespace, Name: d.Name, UID: d.UID}, d.ObjectMeta, d.Status.DesiredNumberScheduled, d.Status.NumberReady)
		}
		return l.Continue, nil
	})
	pages(func(opts metav1.ListOptions) (string, error) {
		l, err := x.kube.CoordinationV1().Leases("").List(ctx, opts)
		if err != nil {
			return "", err
		}
		for _, le := range l.Items {
			if le.Namespace == nodeLeases {
				continue
			}
			c := candidate{ref: gc.ObjectRef{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: le.Namespace, Name: le.Name, UID: le.UID}, lease: true, duration: 15 * time.Second}
			holder := ""
			if le.Spec.HolderIdentity != nil {
				holder = *le.Spec.HolderIdentity
			}
			c.names = namesOf(le.Name, holder, le.Labels)
			if le.Spec.RenewTime != nil {
				t := le.Spec.RenewTime.Time
				c.renewed = &t
			}
			if le.Spec.LeaseDurationSeconds != nil {
				c.duration = time.Duration(*le.Spec.LeaseDurationSeconds) * time.Second
			}
			ix.candidates = append(ix.candidates, c)
		}
		return l.Continue, nil
	})
	return ix
}

// namesOf are the word lists an object is matched on.
func namesOf(name, holder string, labels map[string]string) [][]string {
	out := [][]string{wordsOf(name)}
	if holder != "" {
		out = append(out, wordsOf(holder))
	}
	for _, k := range appLabels {
		if v := labels[k]; v != "" {
			out = append(out, wordsOf(v))
		}
	}
	return out
}

func wordsOf(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == '-' || r == '_' || r == '.' || r == '/' })
}

// matches reports whether one of c's names holds one of tokens as a run of whole words
// ("acme" names acme-controller-manager, not acmex; "cert-manager" names
// cert-manager-webhook).
func (c *candidate) matches(tokens [][]string) bool {
	for _, name := range c.names {
		for _, t := range tokens {
			if containsRun(name, t) {
				return true
			}
		}
	}
	return false
}

func containsRun(words, run []string) bool {
	if len(run) == 0 {
		return false
	}
	for i := 0; i+len(run) <= len(words); i++ {
		if equalWords(words[i:i+len(run)], run) {
			return true
		}
	}
	return false
}

func equalWords(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// evidence is what c shows, and whether it shows a running controller.
func (c *candidate) evidence(now time.Time) (Evidence, bool) {
	if c.lease {
		fresh, detail := leaseFresh(c.renewed, c.duration, now)
		return Evidence{Object: c.ref, Detail: detail}, fresh
	}
	return Evidence{Object: c.ref, Detail: itoa(c.have) + " of " + itoa(c.want) + " ready"}, c.have > 0
}

// find is the candidate of kind, namespace and name.
func (ix *controllerIndex) find(kind, namespace, name string) (candidate, bool) {
	for _, c := range ix.candidates {
		if c.ref.Kind == kind && c.ref.Namespace == namespace && c.ref.Name == name {
			return c, true
		}
	}
	return candidate{}, false
}

package deletion

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// What comes back: a deleted object that a GitOps tool keeps in sync (gitops.go), or whose controller (its owner reference marked
// controller: true) stays makes a replacement, as workload controllers keep their
// replicas: a ReplicaSet's, a StatefulSet's, a DaemonSet's or a ReplicationController's
// Pod, an unfinished Job's Pod, a Deployment's current ReplicaSet, a StatefulSet's claim
// (claimsRemade). A CronJob's Jobs are not replaced, but it makes new ones at its next
// schedule.

// Recreated is an object a delete removes that comes back, who brings it back, and when.
type Recreated struct {
	Object gc.ObjectRef `json:"object"`
	By     gc.ObjectRef `json:"by"`
	Says   string       `json:"says"`
	// When is "" for at once (the delete itself makes the controller act), or what it
	// waits for: RecreatedAtNextSync, RecreatedAtNextSchedule.
	When string `json:"when,omitempty"`
}

// When a controller brings an object back, if not at once.
const (
	// RecreatedAtNextSync: the delete is no event the controller watches; it acts when it
	// next syncs its object (a change of it or of what it owns, or its periodic resync).
	RecreatedAtNextSync = "next-sync"
	// RecreatedAtNextSchedule: a CronJob makes new Jobs at its next schedule.
	RecreatedAtNextSchedule = "next-schedule"
)

// revisionAnnotation is the revision the deployment controller gives a Deployment and its
// ReplicaSets: the current ReplicaSet's is the Deployment's.
const revisionAnnotation = "deployment.kubernetes.io/revision"

// recreators are the controllers that replace what they own, by owner and owned kind.
var recreators = map[[2]string]string{
	{"ReplicaSet", "Pod"}:            "ReplicaSet %s will create a replacement Pod",
	{"StatefulSet", "Pod"}:           "StatefulSet %s will create the Pod again, with the same name",
	{"DaemonSet", "Pod"}:             "DaemonSet %s will create a replacement Pod on the same node",
	{"ReplicationController", "Pod"}: "ReplicationController %s will create a replacement Pod",
	{"Job", "Pod"}:                   "Job %s will create a replacement Pod, unless it has finished",
	{"Deployment", "ReplicaSet"}:     "Deployment %s will create its ReplicaSet again (and its Pods)",
	{"CronJob", "Job"}:               "CronJob %s will not replace this Job, but creates new ones at its next schedule",
}

// recreated says what of p's deletions comes back: those whose controller stays (not
// deleted, not being deleted), and those a GitOps tool applied (the first maxGitOpsReads
// that no controller owns). A Job is asked whether it has finished, and a Deployment
// whether the ReplicaSet is its current one (a GET each, bounded). One pass over the
// deletions; each owner is read from the graph once, however many it owns.
func (x *Explainer) recreated(ctx context.Context, p gc.Prediction, visible Visible) []Recreated {
	going := make(map[types.UID]bool, len(p.Deleted))
	for _, d := range p.Deleted {
		going[d.Object.UID] = true
	}
	owners := map[types.UID]*gc.NodeDetail{}
	ownerOf := func(uid types.UID) *gc.NodeDetail {
		o, seen := owners[uid]
		if !seen {
			if n, ok := x.graph.Node(uid); ok {
				o = &n
			}
			owners[uid] = o
		}
		return o
	}
	reads := 0
	var out []Recreated
	var applied []gc.ObjectRef // owned by no controller: what GitOps tools apply
	for _, d := range p.Deleted {
		n, ok := x.graph.Node(d.Object.UID)
		if !ok {
			continue
		}
		if !controlled(n.Owners) && len(applied) < maxGitOpsReads {
			applied = append(applied, d.Object)
		}
		for _, o := range n.Owners {
			says, known := recreators[[2]string{o.Kind, d.Object.Kind}]
			if !o.Controller || !known || going[o.UID] {
				continue
			}
			owner := ownerOf(o.UID)
			if owner == nil || owner.Virtual || owner.BeingDeleted || !visible.sees(owner.ObjectRef) {
				continue
			}
			text := fmt.Sprintf(says, o.Name)
			if reads < maxVolumeReads {
				reads++
				if comes, why := x.comesBack(ctx, owner.ObjectRef, d); !comes {
					continue
				} else if why != "" {
					text = why
				}
			}
			r := Recreated{Object: d.Object, By: owner.ObjectRef, Says: text}
			if owner.Kind == "CronJob" {
				r.When = RecreatedAtNextSchedule
			}
			out = append(out, r)
		}
	}
	out = append(out, x.claimsRemade(ctx, p, going, visible, &reads)...)
	for _, g := range x.gitOps(ctx, applied) {
		if !visible.sees(g.By) { // what syncs it is not the reader's to see; that it comes back is
			g.By = gc.ObjectRef{APIVersion: g.By.APIVersion, Kind: g.By.Kind}
			g.Says = "a GitOps source you may not read (" + g.By.Kind + ", by its labels) may apply it again"
		}
		out = append(out, g)
	}
	return out
}

// comesBack asks the controller whether it replaces d: a finished Job does not, nor a
// Deployment an old ReplicaSet. why, when set, replaces the table's words.
func (x *Explainer) comesBack(ctx context.Context, owner gc.ObjectRef, d gc.PredictedObject) (bool, string) {
	switch {
	case owner.Kind == "Job" && d.Object.Kind == "Pod":
		j, err := x.kube.BatchV1().Jobs(owner.Namespace).Get(ctx, owner.Name, metav1.GetOptions{})
		if err != nil {
			return true, fmt.Sprintf("Job %s will create a replacement Pod unless it has finished (gcscope could not read it: %v)", owner.Name, err)
		}
		for _, c := range j.Status.Conditions {
			if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == "True" {
				return false, ""
			}
		}
		return true, fmt.Sprintf("Job %s has not finished: it will create a replacement Pod", owner.Name)
	case owner.Kind == "Deployment" && d.Object.Kind == "ReplicaSet":
		dep, err := x.metadataOf(ctx, owner)
		if err != nil {
			return true, ""
		}
		rs, err := x.metadataOf(ctx, d.Object)
		if err != nil {
			return true, ""
		}
		if dep.Annotations[revisionAnnotation] != rs.Annotations[revisionAnnotation] {
			return false, "" // an old ReplicaSet: the Deployment does not make it again
		}
		return true, fmt.Sprintf("ReplicaSet %s is Deployment %s's current one (revision %s): the Deployment will create it again, and its Pods", d.Object.Name, owner.Name, rs.Annotations[revisionAnnotation])
	}
	return true, ""
}

// metadataOf GETs ref's metadata.
func (x *Explainer) metadataOf(ctx context.Context, ref gc.ObjectRef) (*metav1.PartialObjectMetadata, error) {
	rc, err := x.resourceOf(ref)
	if err != nil {
		return nil, err
	}
	return rc.Get(ctx, ref.Name, metav1.GetOptions{})
}

// claimsRemade: a claim a StatefulSet's volumeClaimTemplates made (TEMPLATE-SET-ORDINAL)
// comes back while the StatefulSet stays and the ordinal is among its replicas, owner
// reference or not: its controller creates a Pod's missing claims when it creates the Pod
// (at once, when the delete takes the Pod too), and at each sync while the Pod is Pending;
// a claim's delete alone is no event it watches. The claim it makes is new: it is not
// bound to the deleted one's volume. Each StatefulSet is read once (a GET, within reads' bound).
func (x *Explainer) claimsRemade(ctx context.Context, p gc.Prediction, going map[types.UID]bool, visible Visible, reads *int) []Recreated {
	sets := map[string][]gc.NodeState{} // namespace → the StatefulSets that stay
	read := map[gc.ObjectRef]*appsv1.StatefulSet{}
	podGoing := map[gc.ObjectRef]bool{}
	for _, d := range p.Deleted {
		if d.Object.Kind == "Pod" {
			podGoing[gc.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: d.Object.Namespace, Name: d.Object.Name}] = true
		}
	}
	var out []Recreated
	for _, d := range p.Deleted {
		if !isKind(d.Object, claimKind) {
			continue
		}
		staying, seen := sets[d.Object.Namespace]
		if !seen {
			for _, n := range x.graph.InNamespace(d.Object.Namespace) {
				if isKind(n.ObjectRef, statefulSetKind) && !going[n.UID] && !n.BeingDeleted && visible.sees(n.ObjectRef) {
					staying = append(staying, n)
				}
			}
			sets[d.Object.Namespace] = staying
		}
		for _, n := range staying {
			template, ordinal, ok := claimOf(d.Object.Name, n.Name)
			if !ok {
				continue
			}
			s, known := read[n.ObjectRef]
			if !known {
				if *reads >= maxVolumeReads {
					continue
				}
				*reads++
				s, _ = x.kube.AppsV1().StatefulSets(n.Namespace).Get(ctx, n.Name, metav1.GetOptions{})
				read[n.ObjectRef] = s
			}
			if s == nil || !makesClaim(s, template, ordinal) {
				continue
			}
			pod := gc.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: s.Namespace, Name: fmt.Sprintf("%s-%d", s.Name, ordinal)}
			r := Recreated{Object: d.Object, By: n.ObjectRef,
				Says: fmt.Sprintf("StatefulSet %s will create claim %s again when it creates its Pod %s again: a new claim, not bound to this one's volume", s.Name, d.Object.Name, pod.Name)}
			if !podGoing[pod] {
				r.When = RecreatedAtNextSync
				r.Says = fmt.Sprintf("StatefulSet %s will create claim %s again at its next sync (a change of the set or of its Pods; a Pod that uses the claim holds it until the Pod goes): a new claim, not bound to this one's volume", s.Name, d.Object.Name)
			}
			out = append(out, r)
			break
		}
	}
	return out
}

// claimOf splits a claim's name as a StatefulSet's template makes it: TEMPLATE-SET-ORDINAL.
func claimOf(claim, set string) (template string, ordinal int, ok bool) {
	i := strings.LastIndexByte(claim, '-')
	if i < 0 {
		return "", 0, false
	}
	ordinal, err := strconv.Atoi(claim[i+1:])
	if err != nil || ordinal < 0 {
		return "", 0, false
	}
	template, found := strings.CutSuffix(claim[:i], "-"+set)
	if !found || template == "" {
		return "", 0, false
	}
	return template, ordinal, true
}

// makesClaim: s has a claim template named template, and ordinal is among its replicas.
func makesClaim(s *appsv1.StatefulSet, template string, ordinal int) bool {
	if !slices.ContainsFunc(s.Spec.VolumeClaimTemplates, func(t corev1.PersistentVolumeClaim) bool { return t.Name == template }) {
		return false
	}
	start, replicas := 0, 1
	if s.Spec.Ordinals != nil {
		start = int(s.Spec.Ordinals.Start)
	}
	if s.Spec.Replicas != nil {
		replicas = int(*s.Spec.Replicas)
	}
	return ordinal >= start && ordinal < start+replicas
}

package deletion

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// What comes back: a deleted object that a GitOps tool keeps in sync (gitops.go), or whose controller (its owner reference marked
// controller: true) stays makes a replacement, as workload controllers keep their
// replicas: a ReplicaSet's, a StatefulSet's, a DaemonSet's or a ReplicationController's
// Pod, an unfinished Job's Pod, a Deployment's current ReplicaSet. A CronJob's Jobs are not
// replaced, but it makes new ones at its next schedule.

// Recreated is an object a delete removes that comes back, and who brings it back.
type Recreated struct {
	Object gc.ObjectRef `json:"object"`
	By     gc.ObjectRef `json:"by"`
	Says   string       `json:"says"`
}

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
			out = append(out, Recreated{Object: d.Object, By: owner.ObjectRef, Says: text})
		}
	}
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

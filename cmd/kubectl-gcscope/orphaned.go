package main

// What the plugin can say of an object the collector orphaned. Its engine is started for
// the command, so it holds orphan marks (gc.OrphanMark) only of what it saw happen while
// it ran (tree --watch, in shadow mode: the cluster's collector carrying out a decision
// of the engine). Of the past, the cluster keeps no record of who removed an owner
// reference or when: managedFields record what a manager set, not what it removed (a
// patch that only removes a reference leaves no entry for its manager), and the collector
// writes no event. What is left is the trace a controller leaves on what it makes (a
// Deployment's revision on its ReplicaSets, a CronJob's scheduled time on its Jobs, …):
// such an object without a controller reference was orphaned, by someone.

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/gc"
)

// orphanedAnswer is why's "orphaned" part: the engine's marks, or the trace.
type orphanedAnswer struct {
	// Marks are the engine's own (gc.NodeState.Orphaned), newest last.
	Marks []gc.OrphanMark `json:"marks,omitempty"`
	// Trace: the object carries a controller's trace and has no controller reference.
	Trace *controllerTrace `json:"trace,omitempty"`
}

// controllerTrace is a label or annotation a controller sets on what it makes.
type controllerTrace struct {
	// Key is the label or annotation, Value its value on the object.
	Key   string `json:"key"`
	Value string `json:"value"`
	// Annotation: Key is an annotation (else a label).
	Annotation bool `json:"annotation,omitempty"`
	// MadeBy is the kind of owner that makes such objects, e.g. "Deployment".
	MadeBy string `json:"madeBy"`
	// Text says what the trace means.
	Text string `json:"text"`
}

// controllerTraces are the traces gcscope knows, by the object's group and kind.
var controllerTraces = []struct {
	group, kind string
	key         string
	annotation  bool
	madeBy      string
}{
	{"apps", "ReplicaSet", "deployment.kubernetes.io/revision", true, "Deployment"},
	{"batch", "Job", "batch.kubernetes.io/cronjob-scheduled-timestamp", true, "CronJob"},
	{"", "Pod", "pod-template-hash", false, "ReplicaSet"},
	{"", "Pod", "batch.kubernetes.io/job-name", false, "Job"},
	{"", "Pod", "controller-revision-hash", false, "StatefulSet or DaemonSet"},
}

// traceOf finds a controller's trace on obj (of ref's kind), when obj has no controller
// reference; nil otherwise.
func traceOf(ref gc.ObjectRef, obj *metav1.PartialObjectMetadata) *controllerTrace {
	if metav1.GetControllerOfNoCopy(obj) != nil {
		return nil
	}
	group, _, _ := strings.Cut(ref.APIVersion, "/")
	if !strings.Contains(ref.APIVersion, "/") {
		group = ""
	}
	for _, t := range controllerTraces {
		if t.group != group || t.kind != ref.Kind {
			continue
		}
		values := obj.Labels
		if t.annotation {
			values = obj.Annotations
		}
		v, ok := values[t.key]
		if !ok {
			continue
		}
		what := "label"
		if t.annotation {
			what = "annotation"
		}
		return &controllerTrace{Key: t.key, Value: v, Annotation: t.annotation, MadeBy: t.madeBy, Text: fmt.Sprintf(
			"it has no controller, yet its %s %s says a %s made it: its reference to that %s was removed, by the garbage collector "+
				"when the %s was deleted with --cascade=orphan, or by the %s's controller releasing it. The cluster records neither "+
				"who removed an owner reference nor when (managedFields keep no trace of a removal); a gcscope server whose engine "+
				"removed it shows who and when for a day",
			what, t.key, t.madeBy, t.madeBy, t.madeBy, t.madeBy)}
	}
	return nil
}

// orphanedOf is what why says of e's object: the engine's marks, or else (one GET) a
// controller's trace. Nil when there is nothing to say.
func orphanedOf(ctx context.Context, a *answer, e gc.Explanation) *orphanedAnswer {
	if len(e.Object.Orphaned) > 0 {
		return &orphanedAnswer{Marks: e.Object.Orphaned}
	}
	getCtx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	obj, err := a.kube.get(getCtx, a.target)
	if err != nil {
		return nil // gone meanwhile, or unreadable: the rest of the answer stands
	}
	if t := traceOf(e.Object.ObjectRef, obj); t != nil {
		return &orphanedAnswer{Trace: t}
	}
	return nil
}

// markLabel is a mark as a tree's GC STATE says it.
func markLabel(m gc.OrphanMark) label {
	owner := "an owner you may not see"
	if !m.OwnerHidden {
		owner = m.Owner.Kind + " " + m.Owner.Name
	}
	return label{text: fmt.Sprintf("orphaned from %s (%s) at %s", owner, causeWords(m.Cause), m.At.UTC().Format(time.RFC3339))}
}

func causeWords(c gc.OrphanCause) string {
	switch c {
	case gc.OrphanDelete:
		return "its Orphan delete"
	case gc.OwnerAbsent:
		return "it no longer exists"
	case gc.OwnerDeletingDependents:
		return "its foreground deletion; another owner keeps it"
	}
	return string(c)
}

// renderOrphaned is why's "orphaned" section ("" when there is nothing to say).
func renderOrphaned(o *orphanedAnswer) string {
	if o == nil {
		return ""
	}
	var b strings.Builder
	if len(o.Marks) > 0 {
		b.WriteString("\norphaned (seen by this run of the engine):\n")
		for _, m := range o.Marks {
			fmt.Fprintf(&b, "  - at %s %s\n", m.At.UTC().Format(time.RFC3339), m.Sentence())
		}
	}
	if o.Trace != nil {
		b.WriteString("\norphaned?\n")
		fmt.Fprintf(&b, "  - %s\n", o.Trace.Text)
	}
	return b.String()
}

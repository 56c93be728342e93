package main

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// TestEngineMarksInWhyAndTree: when the plugin's engine holds orphan marks (it saw the
// cluster's collector orphan the object while it ran, as tree --watch does), why and
// tree say who removed which reference, and when.
func TestEngineMarksInWhyAndTree(t *testing.T) {
	at := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	rs := gc.ObjectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: ns, Name: "search-5d4", UID: "uid-rs"}
	marks := []gc.OrphanMark{
		{Owner: gc.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "search", UID: "uid-d"}, Controller: true,
			Cause: gc.OrphanDelete, By: "the cluster's garbage collector (seen by gcscope's engine in shadow mode)", At: at,
			Reason: "the Orphan delete of Deployment search (its dependents stay, without their reference to it)"},
		{OwnerHidden: true, Cause: gc.OwnerAbsent, By: "the cluster's garbage collector (seen by gcscope's engine in shadow mode)", At: at.Add(time.Minute),
			Reason: "an object you may not see no longer exists (a dangling reference); the object's other owners keep it"},
	}
	e := gc.Explanation{Object: gc.NodeState{ObjectRef: rs, Observed: true, Orphaned: marks},
		Next: "nothing: an object without owners is never collected"}
	var b strings.Builder
	b.WriteString(renderWhy(whyAnswer{Explanation: e, Orphaned: &orphanedAnswer{Marks: marks}}, paint(false)))
	b.WriteString("\n---\n\n")
	root, ok := buildTree(func(uid types.UID) (gc.Explanation, bool) { return e, uid == rs.UID }, rs.UID)
	if !ok {
		t.Fatal("no tree")
	}
	b.WriteString(renderTree(root, paint(false)))
	golden(t, "why_tree_orphan_marks", b.String())
}

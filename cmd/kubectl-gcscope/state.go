package main

import (
	"cmp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// severity colours a state: busy is work under way (yellow), stuck is what will not
// resolve by itself or is wrong (red).
type severity int

const (
	sevNone severity = iota
	sevBusy
	sevStuck
)

// label is one piece of an object's garbage-collection state.
type label struct {
	text string
	sev  severity
	// waitingFor is set on a "waits for it" label: the owner that waits (a tree leaves
	// it out below that owner, whose own state says so).
	waitingFor types.UID
}

// stateLabels puts the engine's explanation of an object in a few words each, in the
// engine's own terms: deleting dependents, held by finalizer, dangling owner, orphaning.
func stateLabels(e gc.Explanation) []label {
	o := e.Object
	var out []label
	foreground := slices.Contains(o.Finalizers, metav1.FinalizerDeleteDependents)
	switch {
	case o.Virtual:
		out = append(out, label{text: "not observed: known only as an owner its dependents name", sev: sevBusy})
	case o.DeletingDependents:
		if n := len(e.Blockers) + e.HiddenBlockers; n > 0 {
			out = append(out, label{text: "deleting dependents: waiting on " + counted(n, "blocking dependent"), sev: sevBusy})
		} else {
			out = append(out, label{text: "deleting dependents: none left to wait on", sev: sevBusy})
		}
	case o.BeingDeleted && foreground:
		out = append(out, label{text: "being deleted in the foreground", sev: sevBusy})
	case o.BeingDeleted && slices.Contains(o.Finalizers, metav1.FinalizerOrphanDependents):
		out = append(out, label{text: "orphaning dependents", sev: sevBusy})
	}
	if o.BeingDeleted && len(e.HeldBy) > 0 {
		out = append(out, label{text: heldByText(e.HeldBy), sev: sevStuck})
	} else if o.BeingDeleted && len(out) == 0 && o.APIVersion == "v1" && o.Kind == "Namespace" {
		out = append(out, label{text: "Terminating: the namespace controller deletes its content", sev: sevBusy})
	} else if o.BeingDeleted && len(out) == 0 {
		out = append(out, label{text: "being deleted", sev: sevBusy})
	}
	for _, s := range e.Owners {
		owner := s.Kind + " " + s.Name
		switch s.State {
		case gc.OwnerDangling:
			out = append(out, label{text: "dangling owner reference: " + owner + " (" + s.Reason + ")", sev: sevStuck})
		case gc.OwnerInvalid:
			out = append(out, label{text: "invalid owner reference: " + owner, sev: sevStuck})
		case gc.OwnerUnresolvable:
			out = append(out, label{text: "unresolvable owner reference: " + owner + " (" + s.APIVersion + " not served)", sev: sevStuck})
		case gc.OwnerUnverified:
			out = append(out, label{text: "owner " + owner + " not verified yet", sev: sevBusy})
		case gc.OwnerWaiting:
			out = append(out, label{text: "owner " + owner + " waits for it (foreground)", sev: sevBusy, waitingFor: s.UID})
		}
	}
	for _, m := range o.Orphaned {
		out = append(out, markLabel(m))
	}
	if rest, ok := strings.CutPrefix(e.Next, "delete it"); ok && !o.BeingDeleted {
		out = append(out, label{text: "the collector will delete it" + rest, sev: sevBusy})
	}
	return out
}

func heldByText(finalizers []string) string {
	if len(finalizers) == 1 {
		return "held by finalizer " + finalizers[0]
	}
	return "held by finalizers " + strings.Join(finalizers, ", ")
}

// blockerLabel is where one blocker of a foreground deletion stands.
func blockerLabel(b gc.Blocker, root gc.ObjectRef) label {
	held := withoutCollectorFinalizers(b.Finalizers)
	switch {
	case len(held) > 0 && b.BeingDeleted:
		return label{text: heldByText(held), sev: sevStuck}
	case len(held) > 0:
		return label{text: "not deleted yet; then " + heldByText(held), sev: sevStuck}
	case b.Cycle && b.Object.UID == root.UID:
		return label{text: "the object itself (it names itself as a blocking owner)", sev: sevStuck}
	case b.Cycle:
		return label{text: "an ownership cycle leads back here", sev: sevStuck}
	case b.DeletingDependents && b.Hidden > 0 && len(b.Blockers) == 0:
		return label{text: "deleting dependents: waiting on " + counted(b.Hidden, "blocking dependent") + " you may not see", sev: sevBusy}
	case b.DeletingDependents:
		return label{text: "deleting dependents: waiting on its own blocking dependents", sev: sevBusy}
	case b.InFlight:
		return label{text: "being deleted by a worker now", sev: sevBusy}
	case b.BeingDeleted:
		return label{text: "being deleted", sev: sevBusy}
	}
	return label{text: "not deleted yet", sev: sevBusy}
}

func withoutCollectorFinalizers(fs []string) []string {
	var out []string
	for _, f := range fs {
		if f != metav1.FinalizerDeleteDependents && f != metav1.FinalizerOrphanDependents {
			out = append(out, f)
		}
	}
	return out
}

// objectArg names an object as kubectl accepts it: kind.group/name (pod/x,
// replicaset.apps/x), with -n when namespaced.
func objectArg(r gc.ObjectRef) string {
	kind := strings.ToLower(r.Kind)
	if gv, err := schema.ParseGroupVersion(r.APIVersion); err == nil && gv.Group != "" {
		kind += "." + gv.Group
	}
	s := kind + "/" + r.Name
	if r.Namespace != "" {
		s += " -n " + r.Namespace
	}
	return s
}

// displayName is Kind/name.
func displayName(r gc.ObjectRef) string { return r.Kind + "/" + r.Name }

// compareRefs orders objects for reading: by namespace, kind, then name.
func compareRefs(a, b gc.ObjectRef) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID))
}

// paint colours text for a terminal.
type paint bool

const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiDim    = "\x1b[2m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
)

func (p paint) with(code, s string) string {
	if !p || s == "" {
		return s
	}
	return code + s + ansiReset
}

func (p paint) sev(s severity, text string) string {
	switch s {
	case sevStuck:
		return p.with(ansiRed, text)
	case sevBusy:
		return p.with(ansiYellow, text)
	}
	return text
}

// labels joins labels with "; ", each in its colour; "-" when there is none.
func (p paint) labels(ls []label) string {
	if len(ls) == 0 {
		return p.with(ansiDim, "-")
	}
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = p.sev(l.sev, l.text)
	}
	return strings.Join(parts, "; ")
}

func plainLabels(ls []label) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.text
	}
	return out
}

func worst(ls []label) severity {
	s := sevNone
	for _, l := range ls {
		s = max(s, l.sev)
	}
	return s
}

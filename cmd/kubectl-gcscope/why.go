package main

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
)

// release is a finalizer hold somewhere in the chain, and the command that would lift it.
type release struct {
	Object    gc.ObjectRef `json:"object"`
	Finalizer string       `json:"finalizer"`
	// Owner says who usually removes the finalizer, and when.
	Owner string `json:"owner"`
	// Command is the kubectl command that would remove it by hand: printed, never run.
	Command string `json:"command"`
}

// whyAnswer is the JSON of why -o json: the engine's explanation, and the release
// commands of the holds in it and in its blockers' chain.
type whyAnswer struct {
	Explanation gc.Explanation `json:"explanation"`
	Releases    []release      `json:"releases,omitempty"`
	// Deletion is what package deletion adds: a namespace's deletion, who added the
	// finalizers that hold the object.
	Deletion *deletion.Report `json:"deletion,omitempty"`
	// Orphaned says that an owner reference of the object was removed (orphaned.go).
	Orphaned *orphanedAnswer `json:"orphaned,omitempty"`
}

func whyCommand(fs *pflag.FlagSet) func(context.Context, *options, []string) error {
	output := outputFlag(fs)
	return func(ctx context.Context, o *options, args []string) error {
		if err := checkOutput(*output); err != nil {
			return err
		}
		a, err := prepare(ctx, o, args)
		if err != nil {
			return err
		}
		defer a.session.stop()
		e, ok := a.explain(a.uid)
		if !ok {
			return fmt.Errorf("%s was deleted meanwhile", a.target)
		}
		w := whyAnswer{Explanation: e, Releases: releases(a.explain, e), Orphaned: orphanedOf(ctx, a, e)}
		if x, err := deletion.New(a.session.engine, a.kube.short); err == nil {
			w.Deletion = x.Explain(ctx, e, nil)
			w.Deletion.Amend(&w.Explanation)
			if ns := w.Deletion; ns != nil && ns.Namespace != nil && ns.Namespace.DeletionTimestamp != nil {
				// What holds the namespace is its content's holds: their release commands.
				for _, h := range ns.Namespace.Content.Holders {
					if x, ok := a.explain(h.Object.UID); ok && h.BeingDeleted {
						w.Releases = append(w.Releases, releases(a.explain, x)...)
					}
				}
			}
		}
		if *output == "json" {
			fmt.Fprint(o.stdout, jsonText(w))
			return nil
		}
		fmt.Fprint(o.stdout, renderWhy(w, paint(o.colored(o.stdout))))
		return nil
	}
}

// releases gathers the finalizer holds that keep the object or block its foreground
// deletion: its own (once it is being deleted) and those of held blockers down the
// chain, each with the engine's release command.
func releases(explain func(types.UID) (gc.Explanation, bool), e gc.Explanation) []release {
	var out []release
	seen := map[types.UID]bool{}
	add := func(x gc.Explanation) {
		if seen[x.Object.UID] {
			return
		}
		seen[x.Object.UID] = true
		for _, h := range x.Holds {
			out = append(out, release{Object: x.Object.ObjectRef, Finalizer: h.Finalizer, Owner: h.Owner, Command: h.Release})
		}
	}
	if e.Object.BeingDeleted {
		add(e)
	}
	var walk func(bs []gc.Blocker)
	walk = func(bs []gc.Blocker) {
		for _, b := range bs {
			if len(withoutCollectorFinalizers(b.Finalizers)) > 0 {
				if x, ok := explain(b.Object.UID); ok {
					add(x)
				}
			}
			walk(b.Blockers)
		}
	}
	walk(e.Blockers)
	return out
}

func renderWhy(w whyAnswer, p paint) string {
	e := w.Explanation
	var b strings.Builder
	where := ""
	if e.Object.Namespace != "" {
		where = " in namespace " + e.Object.Namespace
	}
	fmt.Fprintf(&b, "%s%s\n", p.with(ansiBold, displayName(e.Object.ObjectRef)), where)
	labels := stateLabels(e)
	fmt.Fprintf(&b, "state: %s\n", p.labels(labels))
	fmt.Fprintf(&b, "next:  %s\n", e.Next)

	if len(e.Words) > 0 {
		fmt.Fprintf(&b, "\nwhy:\n")
		for _, word := range e.Words {
			fmt.Fprintf(&b, "  - %s\n", word)
		}
	}
	if len(e.Blockers)+e.HiddenBlockers > 0 {
		fmt.Fprintf(&b, "\nblockers (its foreground deletion waits for them):\n")
		type row struct {
			tree, name string
			l          label
		}
		var rows []row
		var walk func(bs []gc.Blocker, hidden int, indent string)
		walk = func(bs []gc.Blocker, hidden int, indent string) {
			for i, bl := range bs {
				glyph, next := "├─", "│ "
				if i == len(bs)-1 && hidden == 0 {
					glyph, next = "└─", "  "
				}
				rows = append(rows, row{indent + glyph, displayName(bl.Object), blockerLabel(bl, e.Object.ObjectRef)})
				walk(bl.Blockers, bl.Hidden, indent+next)
			}
			if hidden > 0 {
				rows = append(rows, row{indent + "└─", counted(hidden, "blocking dependent") + " you may not see", label{}})
			}
		}
		walk(e.Blockers, e.HiddenBlockers, "")
		width := 0
		for _, r := range rows {
			width = max(width, utf8.RuneCountInString(r.tree+r.name))
		}
		for _, r := range rows {
			fill := strings.Repeat(" ", width-utf8.RuneCountInString(r.tree+r.name))
			fmt.Fprintf(&b, "  %s%s%s  %s\n", p.with(ansiDim, r.tree), r.name, fill, p.sev(r.l.sev, r.l.text))
		}
	}
	if len(w.Releases) > 0 {
		fmt.Fprintf(&b, "\nto release a hold by hand (printed, never run; the finalizer's controller then skips its clean-up):\n")
		for _, r := range w.Releases {
			fmt.Fprintf(&b, "  # %s on %s: %s\n", r.Finalizer, displayName(r.Object), r.Owner)
			fmt.Fprintf(&b, "  %s\n", r.Command)
		}
	}
	b.WriteString(renderOrphaned(w.Orphaned))
	b.WriteString(renderDeletion(w.Deletion, p))
	if telling(e) {
		fmt.Fprintf(&b, "\nthe engine's last decision on it: %s\n", describeAction(*e.Last))
	}
	if dependents := len(e.Dependents) + e.HiddenDependents; dependents > 0 {
		fmt.Fprintf(&b, "\n%s: kubectl gcscope tree %s\n", counted(dependents, "dependent"), objectArg(e.Object.ObjectRef))
	}
	return b.String()
}

// telling reports whether the engine's last action on the object says more than next:
// a write it would make (or made), a failure, or why an object being deleted is kept. A
// keep of an object not being deleted only repeats next, and whether the engine happened
// to look at it (an owner its dependents named before it was listed) varies from run to run.
func telling(e gc.Explanation) bool {
	switch {
	case e.Last == nil:
		return false
	case e.Last.Error != "":
		return true
	case e.Last.Verb == gc.VerbGet, e.Last.Verb == gc.VerbRequeue:
		return false
	case e.Last.Verb == gc.VerbKeep:
		return e.Object.BeingDeleted
	}
	return true
}

// describeAction puts one of the engine's actions in words.
func describeAction(a gc.Action) string {
	s := string(a.Verb)
	if a.Policy != "" {
		s += " (" + a.Policy + ")"
	}
	if a.Finalizer != "" {
		s += " " + a.Finalizer
	}
	if a.Reason != "" {
		s += ": " + a.Reason
	}
	switch {
	case a.Shadow:
		s += " [shadow mode: computed, not performed]"
	case a.Error != "":
		s += " [failed: " + a.Error + "]"
	}
	return s
}

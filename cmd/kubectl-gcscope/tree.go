package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// treeNode is one object of the ownership tree, with its state as the engine explains it
// (the JSON of -o json).
type treeNode struct {
	Object     gc.ObjectRef     `json:"object"`
	State      []string         `json:"state,omitempty"`
	Next       string           `json:"next"`
	Words      []string         `json:"words,omitempty"`
	Finalizers []string         `json:"finalizers,omitempty"`
	Owners     []gc.OwnerStatus `json:"owners,omitempty"`
	// ShownAbove: the object is already in the tree (it has several owners there, or an
	// ownership cycle leads back to it); its dependents are listed where it first appears.
	ShownAbove bool        `json:"shownAbove,omitempty"`
	Dependents []*treeNode `json:"dependents,omitempty"`

	labels []label
}

// watchDebounce gathers a burst of graph changes into one redraw.
const watchDebounce = 200 * time.Millisecond

func treeCommand(fs *pflag.FlagSet) func(context.Context, *options, []string) error {
	output := outputFlag(fs)
	watch := fs.BoolP("watch", "w", false, "keep the engine running and redraw the tree whenever it changes (Ctrl-C stops)")
	return func(ctx context.Context, o *options, args []string) error {
		if err := checkOutput(*output); err != nil {
			return err
		}
		a, err := prepare(ctx, o, args)
		if err != nil {
			return err
		}
		defer a.session.stop()
		color := paint(*output == "text" && o.colored(o.stdout))
		render := func() (string, bool) {
			root, ok := buildTree(a.explain, a.uid)
			if !ok {
				return "", false
			}
			if *output == "json" {
				return jsonText(root), true
			}
			return renderTree(root, color), true
		}
		out, ok := render()
		if !ok {
			return fmt.Errorf("%s was deleted meanwhile", a.target)
		}
		fmt.Fprint(o.stdout, out)
		if !*watch {
			return nil
		}
		return watchTree(ctx, a, render, out, o.stdout, isTerminal(o.stdout) && *output == "text")
	}
}

// watchTree redraws the tree whenever the engine's feed moves and the tree reads
// differently, until ctx ends (Ctrl-C) or the object is gone. On a terminal each drawing
// replaces the last; elsewhere drawings follow one another, separated by a blank line.
func watchTree(ctx context.Context, a *answer, render func() (string, bool), last string, w io.Writer, tty bool) error {
	feed := a.session.engine.Feed()
	for {
		seq := feed.LastSeq()
		if feed.Wait(ctx, seq) != nil {
			return nil // Ctrl-C: the normal end of a watch
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(watchDebounce):
		}
		out, ok := render()
		if !ok {
			fmt.Fprintf(w, "\n%s: deleted\n", a.target)
			return nil
		}
		if out == last {
			continue
		}
		if tty {
			fmt.Fprint(w, "\x1b[H\x1b[2J"+out)
		} else {
			fmt.Fprint(w, "\n"+out)
		}
		last = out
	}
}

// buildTree walks the engine's graph from uid down its dependents, explaining each
// object. False if the graph no longer holds uid.
func buildTree(explain func(types.UID) (gc.Explanation, bool), uid types.UID) (*treeNode, bool) {
	seen := map[types.UID]bool{}
	var walk func(uid, parent types.UID) *treeNode
	walk = func(uid, parent types.UID) *treeNode {
		e, ok := explain(uid)
		if !ok {
			return nil // gone between two reads
		}
		n := &treeNode{Object: e.Object.ObjectRef, Next: e.Next, Words: e.Words,
			Finalizers: e.Object.Finalizers, Owners: e.Owners}
		for _, l := range stateLabels(e) {
			if parent == "" || l.waitingFor != parent {
				n.labels = append(n.labels, l)
			}
		}
		// Owners the tree does not show above it: what else keeps it.
		for _, s := range e.Owners {
			switch {
			case s.State != gc.OwnerSolid || s.UID == parent:
			case parent == "":
				n.labels = append(n.labels, label{text: "owned by " + s.Kind + " " + s.Name})
			default:
				n.labels = append(n.labels, label{text: "also owned by " + s.Kind + " " + s.Name})
			}
		}
		n.State = plainLabels(n.labels)
		if seen[uid] {
			n.ShownAbove = true
			return n
		}
		seen[uid] = true
		deps := slices.Clone(e.Dependents)
		slices.SortFunc(deps, compareRefs)
		for _, d := range deps {
			if c := walk(d.UID, uid); c != nil {
				n.Dependents = append(n.Dependents, c)
			}
		}
		return n
	}
	root := walk(uid, "")
	return root, root != nil
}

// renderTree draws the tree in columns: namespace, the object under tree lines, and its
// state. A hint at the end names the first object that holds things up.
func renderTree(root *treeNode, p paint) string {
	type row struct {
		namespace, prefix, name string
		state                   string
		node                    *treeNode
	}
	var rows []row
	var walk func(n *treeNode, prefix, childPrefix string)
	walk = func(n *treeNode, prefix, childPrefix string) {
		state := p.labels(n.labels)
		if n.ShownAbove {
			state = p.with(ansiDim, "(shown above)")
		}
		rows = append(rows, row{n.Object.Namespace, prefix, displayName(n.Object), state, n})
		for i, d := range n.Dependents {
			if i == len(n.Dependents)-1 {
				walk(d, childPrefix+"└─", childPrefix+"  ")
			} else {
				walk(d, childPrefix+"├─", childPrefix+"│ ")
			}
		}
	}
	walk(root, "", "")

	nsWidth, nameWidth := len("NAMESPACE"), len("NAME")
	for _, r := range rows {
		nsWidth = max(nsWidth, utf8.RuneCountInString(r.namespace))
		nameWidth = max(nameWidth, utf8.RuneCountInString(r.prefix+r.name))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %s  %s\n", p.with(ansiDim, pad("NAMESPACE", nsWidth)), p.with(ansiDim, pad("NAME", nameWidth)), p.with(ansiDim, "GC STATE"))
	for i, r := range rows {
		name := r.name
		if i == 0 {
			name = p.with(ansiBold, name)
		}
		fill := strings.Repeat(" ", nameWidth-utf8.RuneCountInString(r.prefix+r.name))
		fmt.Fprintf(&b, "%s  %s%s%s  %s\n", pad(r.namespace, nsWidth), p.with(ansiDim, r.prefix), name, fill, r.state)
	}
	// Point at the most telling object: the first stuck one, else the first busy one.
	var hint *treeNode
	for _, want := range []severity{sevStuck, sevBusy} {
		for _, r := range rows {
			if !r.node.ShownAbove && worst(r.node.labels) == want {
				hint = r.node
				break
			}
		}
		if hint != nil {
			break
		}
	}
	if hint != nil {
		fmt.Fprintf(&b, "\nwhy: kubectl gcscope why %s\n", objectArg(hint.Object))
	}
	return b.String()
}

// pad fills s with spaces to width runes.
func pad(s string, width int) string {
	return s + strings.Repeat(" ", max(0, width-utf8.RuneCountInString(s)))
}

// jsonText is v as indented JSON, with a final newline.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("{\"error\": %q}\n", err.Error())
	}
	return b.String()
}

package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
)

func predictCommand(fs *pflag.FlagSet) func(context.Context, *options, []string) error {
	output := outputFlag(fs)
	cascade := fs.String("cascade", "background", `the propagation policy of the delete: "background", "foreground" or "orphan" (as kubectl delete --cascade)`)
	var set setFlags
	fs.StringVarP(&set.selector, "selector", "l", "", "predict deleting every object of the types named (TYPE[,TYPE…]) that this label selector matches, together (as kubectl delete -l)")
	fs.BoolVarP(&set.all, "all-namespaces", "A", false, "with -l: match in every namespace")
	fs.StringSliceVarP(&set.files, "filename", "f", nil, "predict deleting the objects a manifest declares (FILE, DIR or - for standard input; repeatable), together (as kubectl delete -f)")
	fs.StringVar(&set.helm, "helm-release", "", "predict helm uninstall of this release in the namespace (read from Helm's own release records)")
	fs.StringVar(&set.argoCDApp, "argocd-app", "", "predict deleting this Argo CD Application (-n: its namespace, argocd by default) and what its resources finalizer deletes")
	return func(ctx context.Context, o *options, args []string) error {
		if err := checkOutput(*output); err != nil {
			return err
		}
		policy, err := propagation(*cascade)
		if err != nil {
			return err
		}
		if set.given() || set.all {
			if err := set.check(args); err != nil {
				return err
			}
			return predictSet(ctx, o, &set, policy, strings.ToLower(*cascade), *output)
		}
		a, err := prepare(ctx, o, args)
		if err != nil {
			return err
		}
		defer a.session.stop()
		x, err := deletion.New(a.session.engine, a.kube.short)
		if err != nil {
			return err
		}
		predict := a.session.engine.PredictDelete
		if a.target.mapping.GroupVersionKind.Kind == "Namespace" && a.target.mapping.GroupVersionKind.Group == "" {
			predict = x.PredictNamespace // its content goes with it, by the namespace controller
		}
		pr, ok := predict(a.uid, policy)
		if !ok {
			return fmt.Errorf("%s was deleted meanwhile", a.target)
		}
		parents := orderPrediction(a.session.engine, &pr) // by step, if any, and in tree order (the engine lists them by uid)
		// What the delete does to storage, brings back and leaves behind, read with the
		// user's own credentials, in the order the lists now have.
		c := x.Consequences(ctx, pr, nil)
		if *output == "json" {
			fmt.Fprint(o.stdout, jsonText(struct {
				gc.Prediction
				deletion.Consequences
			}{pr, c}))
			return nil
		}
		fmt.Fprint(o.stdout, renderPrediction(pr, c, parents, strings.ToLower(*cascade), paint(o.colored(o.stdout))))
		return nil
	}
}

// propagation reads --cascade as kubectl delete does (true and false are its old
// spellings of background and orphan).
func propagation(cascade string) (metav1.DeletionPropagation, error) {
	switch strings.ToLower(cascade) {
	case "background", "true":
		return metav1.DeletePropagationBackground, nil
	case "foreground":
		return metav1.DeletePropagationForeground, nil
	case "orphan", "false":
		return metav1.DeletePropagationOrphan, nil
	}
	return "", usageError{fmt.Errorf("--cascade %q: want background, foreground or orphan", cascade)}
}

// orderPrediction lists each list in the order of the ownership tree (treeRank): the
// target, then each owner followed by its dependents, so that the objects an owner takes
// with it are listed together, under it; the engine orders by uid, which differs from
// cluster to cluster. Deletions in steps stay in their steps, each in tree order.
// It returns each object's parent in that tree (the owner it was reached through), for
// renderPrediction to indent a dependent under its owner.
func orderPrediction(engine *gc.GarbageCollector, p *gc.Prediction) map[types.UID]types.UID {
	targets := p.Targets
	if len(targets) == 0 {
		targets = []gc.ObjectRef{p.Target}
	}
	var listed []gc.ObjectRef
	for _, l := range [][]gc.PredictedObject{p.Deleted, p.Orphaned, p.Kept, p.Waiting, p.TargetWaitsFor} {
		for _, po := range l {
			listed = append(listed, po.Object)
		}
	}
	rank, parents := treeRank(targets, listed, func(uid types.UID) (deps []gc.ObjectRef, owners []types.UID) {
		n, ok := engine.Node(uid)
		if !ok {
			return nil, nil
		}
		for _, o := range n.Owners {
			owners = append(owners, o.UID)
		}
		return n.Dependents, owners
	})
	order := func(a, b gc.PredictedObject) int {
		ra, oka := rank[a.Object.UID]
		rb, okb := rank[b.Object.UID]
		return cmp.Or(cmp.Compare(a.Step, b.Step), cmp.Compare(boolRank(!oka), boolRank(!okb)), cmp.Compare(ra, rb), compareRefs(a.Object, b.Object))
	}
	for _, l := range [][]gc.PredictedObject{p.Deleted, p.Orphaned, p.Kept, p.Waiting, p.TargetWaitsFor} {
		slices.SortStableFunc(l, order)
	}
	return parents
}

// treeRank numbers objects in the order of the ownership tree, depth first: each object
// followed by its dependents (siblings by kind and name), from the targets; then the
// objects of listed that no target reaches (a namespace's content), each from the topmost
// of them (one with no owner among them), in kind and name order. graph gives an object's
// dependents and the uids of its owners. parents are the owners each object was reached
// through.
func treeRank(targets, listed []gc.ObjectRef, graph func(types.UID) ([]gc.ObjectRef, []types.UID)) (rank map[types.UID]int, parents map[types.UID]types.UID) {
	rank, parents = map[types.UID]int{}, map[types.UID]types.UID{}
	var visit func(uid, parent types.UID)
	visit = func(uid, parent types.UID) {
		if _, seen := rank[uid]; seen {
			return
		}
		rank[uid] = len(rank)
		if parent != "" {
			parents[uid] = parent
		}
		deps, _ := graph(uid)
		deps = slices.Clone(deps)
		slices.SortFunc(deps, compareRefs)
		for _, d := range deps {
			visit(d.UID, uid)
		}
	}
	roots := slices.Clone(targets)
	slices.SortStableFunc(roots, compareRefs)
	for _, t := range roots {
		visit(t.UID, "")
	}
	rest := slices.Clone(listed)
	slices.SortFunc(rest, compareRefs)
	unranked := map[types.UID]bool{}
	for _, o := range rest {
		if _, seen := rank[o.UID]; !seen {
			unranked[o.UID] = true
		}
	}
	for _, o := range rest {
		if _, seen := rank[o.UID]; seen {
			continue
		}
		_, owners := graph(o.UID)
		if !slices.ContainsFunc(owners, func(u types.UID) bool { _, seen := rank[u]; return unranked[u] && !seen }) {
			visit(o.UID, "")
		}
	}
	for _, o := range rest { // owned in a circle
		visit(o.UID, "")
	}
	return rank, parents
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// renderPrediction writes the prediction in text; parents (orderPrediction's) indent each
// object under its owner when that is listed above it in the same section.
func renderPrediction(p gc.Prediction, c deletion.Consequences, parents map[types.UID]types.UID, cascade string, paint paint) string {
	var b strings.Builder
	ns := ""
	if p.Target.Namespace != "" {
		ns = " -n " + p.Target.Namespace
	}
	fmt.Fprintf(&b, "kubectl delete %s%s --cascade=%s would:\n", strings.TrimSuffix(objectArg(p.Target), ns), ns, cascade)
	renderVolumes(&b, c, paint)
	section := func(verb, why string, list []gc.PredictedObject, note func(gc.PredictedObject) (string, severity)) {
		if len(list) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n%s %s%s:\n", verb, counted(len(list), "object"), why)
		depth := map[types.UID]int{}
		names := make([]string, len(list))
		width := 0
		for i, po := range list {
			d := 0
			if pd, ok := depth[parents[po.Object.UID]]; ok {
				d = pd + 1
			}
			depth[po.Object.UID] = d
			names[i] = strings.Repeat("  ", d) + displayName(po.Object)
			width = max(width, utf8.RuneCountInString(names[i]))
		}
		for i, po := range list {
			text, sev := note(po)
			fmt.Fprintf(&b, "  %s  %s\n", pad(names[i], width), paint.sev(sev, text))
		}
	}
	deleted := func(po gc.PredictedObject) (string, severity) {
		if len(po.Finalizers) > 0 {
			return po.Reason + "; then " + heldByText(po.Finalizers) + " until it is removed", sevStuck
		}
		return po.Reason, sevNone
	}
	if p.Order == "" {
		section("delete", "", p.Deleted, deleted)
	} else {
		fmt.Fprintf(&b, "\ndelete %s, in this order: %s.\n", counted(len(p.Deleted), "object"), p.Order)
		// Numbered as they come: a namespace without Pods starts with the rest of its
		// content, step 1, not the namespace controller's step 2.
		for i, step := 0, 1; i < len(p.Deleted); step++ {
			j := i
			for j < len(p.Deleted) && p.Deleted[j].Step == p.Deleted[i].Step {
				j++
			}
			section(fmt.Sprintf("step %d: delete", step), "", p.Deleted[i:j], deleted)
			i = j
		}
	}
	section("orphan", " (they stay, without their reference to it)", p.Orphaned, func(po gc.PredictedObject) (string, severity) { return po.Reason, sevBusy })
	section("keep", " (another owner holds them, or their reference is invalid)", p.Kept, func(po gc.PredictedObject) (string, severity) { return po.Reason, sevBusy })
	if len(c.Recreated) > 0 {
		verb := map[bool]string{true: "comes back (its controller stays and replaces it)", false: "come back (their controllers stay and replace them)"}[len(c.Recreated) == 1]
		fmt.Fprintf(&b, "\n%s %s:\n", counted(len(c.Recreated), "object"), verb)
		for _, r := range c.Recreated {
			fmt.Fprintf(&b, "  %s  %s\n", displayName(r.Object), paint.sev(sevBusy, r.Says))
		}
	}
	renderLeftBehind(&b, p, c, paint)
	if len(p.TargetWaitsFor) > 0 {
		fmt.Fprintf(&b, "\n%s stays (deleting dependents) until these holds are released:\n", displayName(p.Target))
		for _, po := range p.TargetWaitsFor {
			fmt.Fprintf(&b, "  %s\n", paint.sev(sevStuck, po.Reason))
		}
	}
	fmt.Fprintf(&b, "\nNothing was deleted: this is the engine's prediction from its graph.\n")
	return b.String()
}

// renderVolumes says first what the delete does to data: the disks destroyed with their
// claims, then the volumes that stay.
func renderVolumes(b *strings.Builder, c deletion.Consequences, paint paint) {
	if n := c.DataLoss(); n > 0 {
		fmt.Fprintf(b, "\n%s\n", paint.sev(sevStuck, fmt.Sprintf("DATA LOSS: %s destroyed with %s:", counted(n, "volume"), map[bool]string{true: "its claim", false: "their claims"}[n == 1])))
	}
	for _, v := range c.Volumes {
		if v.Verdict == deletion.VolumeDataLoss {
			fmt.Fprintf(b, "  %s  %s\n", displayName(v.Claim), paint.sev(sevStuck, v.Says))
		}
	}
	var others []deletion.VolumeFate
	for _, v := range c.Volumes {
		if v.Verdict != deletion.VolumeDataLoss && v.Verdict != deletion.VolumeKept {
			others = append(others, v)
		}
	}
	if len(others) > 0 {
		fmt.Fprintf(b, "\nthe volumes of the other claims it deletes:\n")
		for _, v := range others {
			fmt.Fprintf(b, "  %s  %s\n", displayName(v.Claim), v.Says)
		}
	}
	if c.Unread != "" {
		fmt.Fprintf(b, "\n%s\n", paint.sev(sevBusy, "storage not read: "+c.Unread))
	}
}

// renderLeftBehind lists what stays that the sections above do not already say (orphaned
// and kept dependents are there): a StatefulSet's retained claims.
func renderLeftBehind(b *strings.Builder, p gc.Prediction, c deletion.Consequences, paint paint) {
	shown := map[types.UID]bool{}
	for _, l := range [][]gc.PredictedObject{p.Orphaned, p.Kept} {
		for _, po := range l {
			shown[po.Object.UID] = true
		}
	}
	var rest []deletion.LeftBehind
	for _, l := range c.LeftBehind {
		if !shown[l.Object.UID] {
			rest = append(rest, l)
		}
	}
	if len(rest) == 0 {
		return
	}
	fmt.Fprintf(b, "\nleave %s behind:\n", counted(len(rest), "object"))
	width := 0
	for _, l := range rest {
		width = max(width, utf8.RuneCountInString(displayName(l.Object)))
	}
	for _, l := range rest {
		fmt.Fprintf(b, "  %s  %s\n", pad(displayName(l.Object), width), paint.sev(sevBusy, l.Reason))
	}
}

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
		if pr.Order == "" {
			orderPrediction(a.session.engine, &pr)
		} else { // by step, and by name within one (the engine lists them by uid)
			slices.SortStableFunc(pr.Deleted, func(a, b gc.PredictedObject) int {
				return cmp.Or(cmp.Compare(a.Step, b.Step), compareRefs(a.Object, b.Object))
			})
		}
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
		fmt.Fprint(o.stdout, renderPrediction(pr, c, strings.ToLower(*cascade), paint(o.colored(o.stdout))))
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

// orderPrediction lists each list in the order of the ownership tree below the target
// (breadth first, each level by kind and name), which reads as the cascade goes; the
// engine orders by uid, which differs from cluster to cluster.
func orderPrediction(engine *gc.GarbageCollector, p *gc.Prediction) {
	rank := map[types.UID]int{p.Target.UID: 0}
	for queue := []types.UID{p.Target.UID}; len(queue) > 0; queue = queue[1:] {
		n, ok := engine.Node(queue[0])
		if !ok {
			continue
		}
		deps := slices.Clone(n.Dependents)
		slices.SortFunc(deps, compareRefs)
		for _, d := range deps {
			if _, seen := rank[d.UID]; !seen {
				rank[d.UID] = len(rank)
				queue = append(queue, d.UID)
			}
		}
	}
	order := func(a, b gc.PredictedObject) int {
		ra, oka := rank[a.Object.UID]
		rb, okb := rank[b.Object.UID]
		return cmp.Or(cmp.Compare(boolRank(!oka), boolRank(!okb)), cmp.Compare(ra, rb), compareRefs(a.Object, b.Object))
	}
	for _, l := range [][]gc.PredictedObject{p.Deleted, p.Orphaned, p.Kept, p.Waiting, p.TargetWaitsFor} {
		slices.SortFunc(l, order)
	}
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func renderPrediction(p gc.Prediction, c deletion.Consequences, cascade string, paint paint) string {
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
		width := 0
		for _, po := range list {
			width = max(width, utf8.RuneCountInString(displayName(po.Object)))
		}
		for _, po := range list {
			text, sev := note(po)
			fmt.Fprintf(&b, "  %s  %s\n", pad(displayName(po.Object), width), paint.sev(sev, text))
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
		for i := 0; i < len(p.Deleted); {
			j := i
			for j < len(p.Deleted) && p.Deleted[j].Step == p.Deleted[i].Step {
				j++
			}
			section(fmt.Sprintf("step %d: delete", p.Deleted[i].Step), "", p.Deleted[i:j], deleted)
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

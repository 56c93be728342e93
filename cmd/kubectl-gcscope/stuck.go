package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
)

func stuckCommand(fs *pflag.FlagSet) func(context.Context, *options, []string) error {
	output := outputFlag(fs)
	all := fs.BoolP("all-namespaces", "A", false, "list stuck objects of every namespace, and cluster-scoped ones")
	olderThan := fs.Duration("older-than", deletion.DefaultStuckAfter, "how long ago a deletion must have started to count as stuck")
	return func(ctx context.Context, o *options, args []string) error {
		if err := checkOutput(*output); err != nil {
			return err
		}
		if len(args) > 0 {
			return usageError{fmt.Errorf("stuck takes no argument, got %q (use -n NAMESPACE or -A)", args[0])}
		}
		if *olderThan < 0 {
			return usageError{fmt.Errorf("--older-than %v: want a duration of 0s or more", *olderThan)}
		}
		e, err := prepareEngine(ctx, o, true)
		if err != nil {
			return err
		}
		defer e.session.stop()
		k, s, x := e.kube, e.session, e.deletions
		var r deletion.StuckReport
		if *all {
			r = x.Stuck(ctx, *olderThan, nil)
		} else {
			r = x.StuckIn(ctx, *olderThan, k.namespace)
		}
		if *output == "json" {
			fmt.Fprint(o.stdout, jsonText(r))
			return nil
		}
		where := "in namespace " + k.namespace
		if *all {
			where = "in the cluster"
		}
		var apis []deletion.APIServiceReport
		if len(r.DiscoveryFailures) > 0 { // since when they fail, as far as the cluster knows
			apis = x.APIServices(ctx, r.DiscoveryFailures, nil)
		}
		fmt.Fprint(o.stdout, renderStuck(r, where, discoveryWarnings(r.DiscoveryFailures, apis, s.started, time.Now()), paint(o.colored(o.stdout))))
		return nil
	}
}

// discoveryWarnings says, for each group version discovery fails for, why, and since when
// as far as anyone knows: the engine knows only since it started (with this command), so
// its own "since" is not told; the Available condition of the group version's APIService
// says since when the cluster has found it unavailable.
func discoveryWarnings(failures map[string]gc.GroupFailure, apis []deletion.APIServiceReport, engineStarted, now time.Time) []string {
	var out []string
	for _, gv := range slices.Sorted(maps.Keys(failures)) {
		f := failures[gv]
		w := fmt.Sprintf("API discovery fails for %s: %s", gv, f.Error)
		i := slices.IndexFunc(apis, func(a deletion.APIServiceReport) bool {
			return a.GroupVersion == gv && a.Available != "True" && a.Since != nil
		})
		switch {
		case i >= 0:
			a := apis[i]
			w += fmt.Sprintf(" (APIService %s not available since %s, %s ago)", a.Name, a.Since.Format(time.RFC3339), now.Sub(*a.Since).Round(time.Second))
		case f.Since.Before(engineStarted):
			w += fmt.Sprintf(" (failing since %s, %s ago)", f.Since.Format(time.RFC3339), now.Sub(f.Since).Round(time.Second))
		default:
			w += " (failing already when this command started; since when, the cluster does not say)"
		}
		out = append(out, w)
	}
	return out
}

func renderStuck(r deletion.StuckReport, where string, warnings []string, p paint) string {
	var b strings.Builder
	for _, w := range warnings {
		fmt.Fprintf(&b, "%s %s\n", p.sev(sevStuck, "warning:"), w)
	}
	if r.Total == 0 {
		fmt.Fprintf(&b, "nothing is stuck %s: no deletion started more than %s ago is still waiting\n", where, r.OlderThan)
		return b.String()
	}
	fmt.Fprintf(&b, "%s stuck %s (deletion started more than %s ago):\n", counted(r.Total, "object"), where, r.OlderThan)
	for _, g := range r.Groups {
		fmt.Fprintf(&b, "\n%s  %s\n", p.with(ansiBold, fmt.Sprintf("%d %s", g.Count, g.Cause)), g.Says)
		if o := g.Origin; o != nil && o.Manager != "" {
			fmt.Fprintf(&b, "  finalizer added by field manager %s; controller %s\n", o.Manager, o.Controller.State)
		}
		for _, so := range g.Objects {
			detail := ""
			if so.Detail != "" {
				detail = "  " + so.Detail
			}
			fmt.Fprintf(&b, "  %-50s %s%s\n", objectArg(so.Object), p.sev(sevStuck, "for "+(time.Duration(so.ForSeconds)*time.Second).String()), detail)
		}
		if g.More > 0 {
			fmt.Fprintf(&b, "  … and %d more\n", g.More)
		}
	}
	fmt.Fprintf(&b, "\nkubectl gcscope why KIND/NAME says what would release each.\n")
	return b.String()
}

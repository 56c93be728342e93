package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gcscope/gcscope/deletion"
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
		k, err := connect(o)
		if err != nil {
			return err
		}
		if err := k.reach(); err != nil {
			return err
		}
		s, err := syncedSession(ctx, k, o)
		if err != nil {
			return err
		}
		defer s.stop()
		x, err := deletion.New(s.engine, k.short)
		if err != nil {
			return err
		}
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
		fmt.Fprint(o.stdout, renderStuck(r, where, paint(o.colored(o.stdout))))
		return nil
	}
}

func renderStuck(r deletion.StuckReport, where string, p paint) string {
	var b strings.Builder
	for gv, f := range r.DiscoveryFailures {
		fmt.Fprintf(&b, "%s API discovery fails for %s since %s: %s\n", p.sev(sevStuck, "warning:"), gv, f.Since.Format(time.RFC3339), f.Error)
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

package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/gcscope/gcscope/deletion"
)

// The plugin's side of package deletion: what `why` adds for a namespace and for an
// object other controllers' finalizers hold, in text.

// renderDeletion is the text of a deletion report (nothing when r is nil).
func renderDeletion(r *deletion.Report, p paint) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	if r.Error != "" {
		fmt.Fprintf(&b, "\n%s\n", p.sev(sevStuck, r.Error))
	}
	if ns := r.Namespace; ns != nil {
		renderNamespace(&b, ns, p)
	}
	if len(r.Origins) > 0 {
		fmt.Fprintf(&b, "\nwho added the finalizers that hold it (its managedFields):\n")
		for _, o := range r.Origins {
			renderOrigin(&b, o, "  ", p)
		}
	}
	return b.String()
}

func renderNamespace(b *strings.Builder, ns *deletion.NamespaceReport, p paint) {
	if ns.DeletionTimestamp != nil {
		fmt.Fprintf(b, "\nnamespace: %s since %s (%s ago)\n", p.sev(sevStuck, "Terminating"), ns.DeletionTimestamp.Format(time.RFC3339), time.Since(*ns.DeletionTimestamp).Round(time.Second))
	} else {
		fmt.Fprintf(b, "\nnamespace: %s\n", ns.Phase)
	}
	if len(ns.Finalizers) > 0 {
		fmt.Fprintf(b, "  spec.finalizers: %s\n", strings.Join(ns.Finalizers, ", "))
	}
	if len(ns.MetadataFinalizers) > 0 {
		fmt.Fprintf(b, "  metadata.finalizers: %s\n", strings.Join(ns.MetadataFinalizers, ", "))
	}
	if len(ns.Conditions) > 0 {
		fmt.Fprintf(b, "  conditions (the namespace controller's):\n")
		for _, c := range ns.Conditions {
			sev := sevNone
			if c.Status == "True" {
				sev = sevStuck
			}
			fmt.Fprintf(b, "    %s=%s  %s\n", c.Type, p.sev(sev, c.Status), c.Reason+": "+c.Message)
		}
	}
	c := ns.Content
	left := c.Total + c.Hidden
	fmt.Fprintf(b, "  content left: %s", counted(left, "object"))
	if c.Hidden > 0 {
		fmt.Fprintf(b, " (%d you may not see)", c.Hidden)
	}
	fmt.Fprintln(b)
	for _, k := range c.ByKind {
		extra := ""
		if k.Held > 0 {
			extra = fmt.Sprintf(" (%d held by finalizers)", k.Held)
		}
		fmt.Fprintf(b, "    %5d %s%s\n", k.Count, k.Kind, extra)
	}
	if len(c.Holders) > 0 {
		fmt.Fprintf(b, "  held by:\n")
		for _, h := range c.Holders {
			fmt.Fprintf(b, "    %s  %s\n", displayName(h.Object), p.sev(sevStuck, strings.Join(h.Finalizers, ", ")))
		}
		if c.MoreHolders > 0 {
			fmt.Fprintf(b, "    … and %d more\n", c.MoreHolders)
		}
	}
	for _, o := range c.Origins {
		renderOrigin(b, o, "  ", p)
	}
	for _, a := range ns.APIServices {
		fmt.Fprintf(b, "  APIService %s (%s): Available=%s", a.Name, a.GroupVersion, a.Available)
		if a.Message != "" {
			fmt.Fprintf(b, " %s", a.Message)
		}
		fmt.Fprintln(b)
		if a.Service != "" {
			exists := "does not exist"
			if a.ServiceExists {
				exists = fmt.Sprintf("exists, %d ready endpoints", a.ReadyEndpoints)
			}
			fmt.Fprintf(b, "    Service %s: %s\n", a.Service, exists)
		}
		if a.Problem != "" {
			fmt.Fprintf(b, "    %s; %s\n", p.sev(sevStuck, a.Problem), a.Next)
		}
	}
}

func renderOrigin(b *strings.Builder, o deletion.FinalizerOrigin, indent string, p paint) {
	by := o.Unknown
	if o.Manager != "" {
		by = "added by field manager " + p.with(ansiBold, o.Manager)
		if o.Operation != "" {
			by += " (" + o.Operation
			if o.Time != nil {
				by += ", " + o.Time.Format(time.RFC3339)
			}
			by += ")"
		}
	}
	fmt.Fprintf(b, "%s%s on %s: %s\n", indent, o.Finalizer, displayName(o.Object), by)
	sev := sevNone
	if o.Controller.State != deletion.Alive {
		sev = sevStuck
	}
	fmt.Fprintf(b, "%s  controller: %s\n", indent, p.sev(sev, o.Controller.State+": "+o.Controller.Says))
	for _, e := range o.Controller.Evidence {
		fmt.Fprintf(b, "%s    %s: %s\n", indent, objectArg(e.Object), e.Detail)
	}
	fmt.Fprintf(b, "%s  removing it by hand risks: %s\n", indent, o.Risk)
}

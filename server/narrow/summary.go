package narrow

import (
	"cmp"
	"slices"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/access"
	"github.com/gcscope/gcscope/server/wire"
)

// Summarize adds up the groups vis may see (nil: all) per namespace and per kind.
func Summarize(sum gc.Summary, vis *access.Visibility) wire.Summary {
	resp := wire.Summary{Seq: sum.Seq, Namespaces: []wire.NamespaceCount{}, Kinds: []wire.KindCount{}}
	kinds := map[[2]string]int{}
	for _, g := range sum.Groups { // sorted by namespace
		if !vis.Visible(gc.ObjectRef{Namespace: g.Namespace, APIVersion: g.APIVersion, Kind: g.Kind}) {
			continue
		}
		if n := len(resp.Namespaces); n == 0 || resp.Namespaces[n-1].Name != g.Namespace {
			resp.Namespaces = append(resp.Namespaces, wire.NamespaceCount{Name: g.Namespace})
		}
		ns := &resp.Namespaces[len(resp.Namespaces)-1]
		ns.Objects += g.Objects
		ns.BeingDeleted += g.BeingDeleted
		ns.DeletingDependents += g.DeletingDependents
		ns.Virtual += g.Virtual
		resp.Objects += g.Objects
		kinds[[2]string{g.APIVersion, g.Kind}] += g.Objects
	}
	for k, n := range kinds {
		resp.Kinds = append(resp.Kinds, wire.KindCount{APIVersion: k[0], Kind: k[1], Objects: n})
	}
	slices.SortFunc(resp.Kinds, func(a, b wire.KindCount) int {
		return cmp.Or(cmp.Compare(a.APIVersion, b.APIVersion), cmp.Compare(a.Kind, b.Kind))
	})
	return resp
}

package narrow

import (
	"cmp"
	"slices"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/access"
)

// Summary is the graph counted, of what the user may list: per namespace (its
// totals, not its kinds: a page draws a namespace it does not show in detail as a box
// with counts) and per kind cluster-wide (for the kind filter). Its size follows the
// namespaces, not the objects (docs/api.md).
type Summary struct {
	Seq        uint64           `json:"seq"`
	Objects    int              `json:"objects"`
	Namespaces []NamespaceCount `json:"namespaces"` // by name; "" is cluster-scoped
	Kinds      []KindCount      `json:"kinds"`      // by apiVersion and kind
}

type NamespaceCount struct {
	Name               string `json:"name"`
	Objects            int    `json:"objects"`
	BeingDeleted       int    `json:"beingDeleted,omitempty"`
	DeletingDependents int    `json:"deletingDependents,omitempty"`
	Virtual            int    `json:"virtual,omitempty"`
}

type KindCount struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Objects    int    `json:"objects"`
}

// Summarize adds up the groups vis may see (nil: all) per namespace and per kind.
func Summarize(sum gc.Summary, vis *access.Visibility) Summary {
	resp := Summary{Seq: sum.Seq, Namespaces: []NamespaceCount{}, Kinds: []KindCount{}}
	kinds := map[[2]string]int{}
	for _, g := range sum.Groups { // sorted by namespace
		if !vis.Visible(gc.ObjectRef{Namespace: g.Namespace, APIVersion: g.APIVersion, Kind: g.Kind}) {
			continue
		}
		if n := len(resp.Namespaces); n == 0 || resp.Namespaces[n-1].Name != g.Namespace {
			resp.Namespaces = append(resp.Namespaces, NamespaceCount{Name: g.Namespace})
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
		resp.Kinds = append(resp.Kinds, KindCount{APIVersion: k[0], Kind: k[1], Objects: n})
	}
	slices.SortFunc(resp.Kinds, func(a, b KindCount) int {
		return cmp.Or(cmp.Compare(a.APIVersion, b.APIVersion), cmp.Compare(a.Kind, b.Kind))
	})
	return resp
}

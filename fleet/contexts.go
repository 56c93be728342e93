package fleet

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Contexts picks the contexts to serve from a kubeconfig (named where, in errors): those
// given, in order, or with none given every one, the current one first (the default).
// Names a URL cannot hold ("." and "..": a browser resolves /api/v1/clusters/../graph to
// the default cluster's /api/v1/graph) and names the kubeconfig lacks are refused.
func Contexts(raw clientcmdapi.Config, given []string, where string) ([]string, error) {
	names := given
	if len(given) == 0 {
		for name := range raw.Contexts {
			names = append(names, name)
		}
		slices.Sort(names)
		if i := slices.Index(names, raw.CurrentContext); i > 0 {
			names = append([]string{raw.CurrentContext}, slices.Delete(names, i, i+1)...)
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("--all-contexts: %s has no context", where)
		}
	}
	for _, name := range names {
		if name == "." || name == ".." {
			return nil, fmt.Errorf("context %q cannot be served next to others: a URL cannot name it; rename it in %s", name, where)
		}
		if _, ok := raw.Contexts[name]; !ok {
			var have []string
			for n := range raw.Contexts {
				have = append(have, strconv.Quote(n))
			}
			slices.Sort(have)
			return nil, fmt.Errorf("--context %q: %s has no such context (it has %s)", name, where, strings.Join(have, ", "))
		}
	}
	return names, nil
}

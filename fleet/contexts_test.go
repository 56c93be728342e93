package fleet

import (
	"slices"
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Every context, the current one first; those given, in their order; names a URL cannot
// hold and names the kubeconfig lacks refused.
func TestContexts(t *testing.T) {
	raw := clientcmdapi.Config{CurrentContext: "west", Contexts: map[string]*clientcmdapi.Context{"east": {}, "west": {}, "a/b": {}}}
	if got, err := Contexts(raw, nil, "kc"); err != nil || !slices.Equal(got, []string{"west", "a/b", "east"}) {
		t.Errorf("all: %v %v, want the current first, then sorted", got, err)
	}
	if got, err := Contexts(raw, []string{"east", "west"}, "kc"); err != nil || !slices.Equal(got, []string{"east", "west"}) {
		t.Errorf("given: %v %v", got, err)
	}
	if _, err := Contexts(raw, []string{"east", "nope"}, "kc"); err == nil || !strings.Contains(err.Error(), `kc has no such context (it has "a/b", "east", "west")`) {
		t.Errorf("unknown: %v", err)
	}
	raw.Contexts[".."] = &clientcmdapi.Context{}
	if _, err := Contexts(raw, nil, "kc"); err == nil || !strings.Contains(err.Error(), "a URL cannot name it") {
		t.Errorf("..: %v", err)
	}
	if _, err := Contexts(clientcmdapi.Config{}, nil, "kc"); err == nil || !strings.Contains(err.Error(), "kc has no context") {
		t.Errorf("none: %v", err)
	}
}

package server

// The authorizer's cache, and a stream that follows a change of its user's permissions.

import (
	"context"
	"sync"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/gcscope/gcscope/server/graph"
	"github.com/gcscope/gcscope/server/security"
)

// recordingAuthz allows listing in one namespace, and records the namespaces it is asked
// about.
type recordingAuthz struct {
	allow string
	mu    sync.Mutex
	asked map[string]bool
}

func (a *recordingAuthz) Allowed(_ context.Context, _ *security.User, res *authorizationv1.ResourceAttributes, _ *authorizationv1.NonResourceAttributes) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if res == nil {
		return false, nil
	}
	a.asked[res.Namespace] = true
	return res.Namespace == a.allow, nil
}

// TestAFilteredGraphAsksOnlyAboutItsNamespace: a read of one namespace's graph asks the
// authorizer about that namespace (and cluster-wide access) only. Asking about every
// namespace of the cluster, one SubjectAccessReview after another, took a user's read
// of one namespace 7 s on a cluster of a few dozen.
func TestAFilteredGraphAsksOnlyAboutItsNamespace(t *testing.T) {
	e := env(t)
	nsA, nsB := e.namespace(t), e.namespace(t)
	mine := e.configMap(t, nsA, "mine", nil)
	e.configMap(t, nsB, "theirs", nil)
	authz := &recordingAuthz{allow: nsA, asked: map[string]bool{}}
	ts, _ := e.serve(t, Options{Authorizer: authz})
	var g graph.GraphResponse
	if code := newClient(t, ts).getJSON("/api/v1/graph?namespace="+nsA, &g); code != 200 {
		t.Fatalf("graph: %d", code)
	}
	if len(g.Nodes) != 1 || g.Nodes[0].UID != mine.UID {
		t.Fatalf("graph of %s: %v, want just its ConfigMap", nsA, g.Nodes)
	}
	authz.mu.Lock()
	defer authz.mu.Unlock()
	for ns := range authz.asked {
		if ns != "" && ns != nsA {
			t.Errorf("a read of %s's graph asked about namespace %s (asked about %d namespaces)", nsA, ns, len(authz.asked))
			break
		}
	}
}

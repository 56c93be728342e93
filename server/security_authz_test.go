package server

// The authorizer's cache, and a stream that follows a change of its user's permissions.

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gcscope/gcscope/server/access"
	"github.com/gcscope/gcscope/server/wire"
)

// switchableAuthz allows listing pods in the namespaces of its set, which a test changes.
type switchableAuthz struct {
	mu  sync.Mutex
	nss []string
}

func (a *switchableAuthz) set(nss ...string) { a.mu.Lock(); a.nss = nss; a.mu.Unlock() }

func (a *switchableAuthz) Allowed(_ context.Context, _ *User, res *authorizationv1.ResourceAttributes, _ *authorizationv1.NonResourceAttributes) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return res != nil && res.Namespace != "" && slices.Contains(a.nss, res.Namespace), nil
}

// TestStreamFollowsPermissionChanges: when what the user may list changes, the client is
// sent a new snapshot that holds exactly what it may now see.
func TestStreamFollowsPermissionChanges(t *testing.T) {
	authz := &switchableAuthz{}
	authz.set("a")
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, k := range []string{"Deployment", "ReplicaSet", "Pod"} {
		mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: k}, meta.RESTScopeNamespace)
	}
	e := newStreamEnv(t, 1024, hubOptions{Visibility: func(r *http.Request) *access.Visibility {
		return access.New(context.Background(), anonymous, authz, mapper).RefreshAfter(100 * time.Millisecond)
	}}).start(t)
	e.eng.publish(addNode(mkNode("pa", "a", "Pod"))...)
	e.eng.publish(addNode(mkNode("pb", "b", "Pod"))...)
	c := e.dial(t, "")
	m := newStreamModel()
	f := c.next()
	if err := m.apply(f); err != nil {
		t.Fatal(err)
	}
	if got := uidsOf(m.nodes); !slices.Equal(got, []string{"pa"}) {
		t.Fatalf("first snapshot holds %v, want [pa]", got)
	}
	authz.set("b")
	for {
		f := c.next()
		if err := m.apply(f); err != nil {
			t.Fatal(err)
		}
		if f.Type == "snapshot" {
			if f.Reason != string(wire.ReasonPermissions) {
				t.Fatalf("snapshot for %q, want %q", f.Reason, string(wire.ReasonPermissions))
			}
			break
		}
	}
	if got := uidsOf(m.nodes); !slices.Equal(got, []string{"pb"}) {
		t.Fatalf("after the permission change the client holds %v, want [pb]", got)
	}
}

// recordingAuthz allows listing in one namespace, and records the namespaces it is asked
// about.
type recordingAuthz struct {
	allow string
	mu    sync.Mutex
	asked map[string]bool
}

func (a *recordingAuthz) Allowed(_ context.Context, _ *User, res *authorizationv1.ResourceAttributes, _ *authorizationv1.NonResourceAttributes) (bool, error) {
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
	var g graphResponse
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

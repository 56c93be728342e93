package stream

// What a stream's user may see: permissions changing under an open stream, a former owner
// the user may not see, and the bounds on a user's streams.

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/access"
	"github.com/gcscope/gcscope/server/security"
	"github.com/gcscope/gcscope/server/security/securitytest"
	"github.com/gcscope/gcscope/server/stream/streamtest"
	"github.com/gcscope/gcscope/server/wire"
)

// The stream tells a user the mark without the former owner it may not see.
func TestStreamRedactsAHiddenFormerOwner(t *testing.T) {
	authz := &securitytest.SwitchableAuthz{}
	authz.Set("a")
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, k := range []string{"ReplicaSet", "Pod"} {
		mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: k}, meta.RESTScopeNamespace)
	}
	e := newStreamEnv(t, 1024, Options{Visibility: func(r *http.Request) *access.Visibility {
		return access.New(context.Background(), &security.User{Name: "local"}, authz, mapper)
	}}).start(t)
	hidden := gc.ObjectRef{APIVersion: "v1", Kind: "ReplicaSet", Namespace: "b", Name: "secret-rs", UID: "rs-b"}
	shown := gc.ObjectRef{APIVersion: "v1", Kind: "ReplicaSet", Namespace: "a", Name: "shown-rs", UID: "rs-a"}
	mark := func(o gc.ObjectRef) gc.OrphanMark {
		return gc.OrphanMark{Owner: o, Cause: gc.OrphanDelete, By: "the garbage collector", At: time.Unix(1, 0),
			Reason: "the Orphan delete of ReplicaSet " + o.Name}
	}
	first := streamtest.MakeNode("pa", "a", "Pod")
	first.Orphaned = []gc.OrphanMark{mark(hidden)}
	e.eng.Publish(streamtest.AddNode(first)...)
	c := e.dial(t, "")
	m := streamtest.NewModel()
	if err := m.Apply(c.next()); err != nil {
		t.Fatal(err)
	}
	if got := m.Nodes["pa"].Orphaned; len(got) != 1 || !got[0].OwnerHidden || got[0].Owner.Name != "" || strings.Contains(got[0].Reason, "secret-rs") {
		t.Errorf("snapshot's mark = %+v, want the former owner hidden", got)
	}
	updated := *first
	updated.Orphaned = []gc.OrphanMark{mark(hidden), mark(shown)}
	e.eng.Publish(gc.Event{Type: gc.NodeUpdated, Node: &updated})
	for len(m.Nodes["pa"].Orphaned) < 2 {
		f := c.next()
		if strings.Contains(string(f.Raw), "secret-rs") || strings.Contains(string(f.Raw), "rs-b") {
			t.Errorf("a frame names the hidden former owner: %s", f.Raw)
		}
		if err := m.Apply(f); err != nil {
			t.Fatal(err)
		}
	}
	got := m.Nodes["pa"].Orphaned
	if !got[0].OwnerHidden || got[1].OwnerHidden || got[1].Owner != shown {
		t.Errorf("updated marks = %+v, want the first hidden and the second naming %+v", got, shown)
	}
}

// TestStreamFollowsPermissionChanges: when what the user may list changes, the client is
// sent a new snapshot that holds exactly what it may now see.
func TestStreamFollowsPermissionChanges(t *testing.T) {
	authz := &securitytest.SwitchableAuthz{}
	authz.Set("a")
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, k := range []string{"Deployment", "ReplicaSet", "Pod"} {
		mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: k}, meta.RESTScopeNamespace)
	}
	e := newStreamEnv(t, 1024, Options{Visibility: func(r *http.Request) *access.Visibility {
		return access.New(context.Background(), &security.User{Name: "local"}, authz, mapper).RefreshAfter(100 * time.Millisecond)
	}}).start(t)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("pa", "a", "Pod"))...)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("pb", "b", "Pod"))...)
	c := e.dial(t, "")
	m := streamtest.NewModel()
	f := c.next()
	if err := m.Apply(f); err != nil {
		t.Fatal(err)
	}
	if got := uidsOf(m.Nodes); !slices.Equal(got, []string{"pa"}) {
		t.Fatalf("first snapshot holds %v, want [pa]", got)
	}
	authz.Set("b")
	for {
		f := c.next()
		if err := m.Apply(f); err != nil {
			t.Fatal(err)
		}
		if f.Type == "snapshot" {
			if f.Reason != string(wire.ReasonPermissions) {
				t.Fatalf("snapshot for %q, want %q", f.Reason, string(wire.ReasonPermissions))
			}
			break
		}
	}
	if got := uidsOf(m.Nodes); !slices.Equal(got, []string{"pb"}) {
		t.Fatalf("after the permission change the client holds %v, want [pb]", got)
	}
}

func TestStreamClientCaps(t *testing.T) {
	e := newStreamEnv(t, 1024, Options{MaxClients: 3, MaxClientsPerUser: 2,
		User: func(r *http.Request) string { return r.Header.Get("X-Test-User") }}).start(t)
	as := func(user string) *websocket.DialOptions {
		return &websocket.DialOptions{HTTPHeader: http.Header{"X-Test-User": {user}}}
	}
	// closedWith dials and expects the server to close at once with 1013 and a reason.
	closedWith := func(user, wantReason string) {
		t.Helper()
		c := e.dialWith(t, "", as(user))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _, err := c.conn.Read(ctx)
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusTryAgainLater || !strings.Contains(ce.Reason, wantReason) {
			t.Fatalf("user %s over the cap: %v; want close 1013 saying %q", user, err, wantReason)
		}
	}
	alice1 := e.dialWith(t, "", as("alice"))
	alice1.next()
	e.dialWith(t, "", as("alice")).next()
	closedWith("alice", "too many streams for this user")
	bob := e.dialWith(t, "", as("bob"))
	if f := bob.next(); f.Type != "snapshot" {
		t.Fatalf("bob under his cap: %s", f.Raw)
	}
	closedWith("carol", "the server holds its maximum of 3")
	// A closed stream frees its place.
	alice1.conn.Close(websocket.StatusNormalClosure, "bye")
	testkit.Eventually(t, "the server to release alice's stream", func() bool { return e.hub.clientCount() == 2 })
	if f := e.dialWith(t, "", as("carol")).next(); f.Type != "snapshot" {
		t.Fatalf("carol after a stream closed: %s", f.Raw)
	}
}

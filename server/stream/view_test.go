package stream

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/access"
	"github.com/gcscope/gcscope/server/security"
	"github.com/gcscope/gcscope/server/security/securitytest"
	"github.com/gcscope/gcscope/server/stream/streamtest"
	"github.com/gcscope/gcscope/server/wire"
)

// TestViewHasARuleForEveryEventType walks the feed's declared event types: a type added
// to gc.EventTypes without a rule here would be dropped for every client.
func TestViewHasARuleForEveryEventType(t *testing.T) {
	for _, typ := range gc.EventTypes() {
		if _, ok := eventRules[typ]; !ok {
			t.Errorf("the stream's view has no rule for event type %q (add one to eventRules)", typ)
		}
	}
	declared := map[gc.EventType]bool{}
	for _, typ := range gc.EventTypes() {
		declared[typ] = true
	}
	for typ := range eventRules {
		if !declared[typ] {
			t.Errorf("eventRules has a rule for %q, which gc.EventTypes does not declare", typ)
		}
	}
}

// restrictedView is the view of a client that may list pods in namespace a only, and
// subscribed to everything (queues included).
func restrictedView(t *testing.T) *view {
	t.Helper()
	authz := &securitytest.SwitchableAuthz{}
	authz.Set("a")
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace)
	v := newView(wire.Subscription{Queues: true}, access.New(context.Background(), &security.User{Name: "local"}, authz, mapper))
	v.reset(nil)
	return v
}

// TestViewDropsUnknownEventTypes: an event of a type the server does not know may name
// anything; neither a restricted viewer nor one that sees everything receives it.
func TestViewDropsUnknownEventTypes(t *testing.T) {
	unknown := gc.Event{Seq: 1, Type: gc.EventType("somethingNew"), Node: streamtest.MakeNode("pb", "b", "Pod")}
	if _, keep, _ := restrictedView(t).filter(unknown); keep {
		t.Errorf("a restricted viewer received an event of unknown type %q", unknown.Type)
	}
	all := newView(wire.Subscription{Queues: true}, nil)
	all.reset(nil)
	if _, keep, _ := all.filter(unknown); keep {
		t.Errorf("a viewer of everything received an event of unknown type %q", unknown.Type)
	}
}

// TestViewRulesForARestrictedViewer: each known type is decided by its rule: what the
// user may see passes, what it may not does not.
func TestViewRulesForARestrictedViewer(t *testing.T) {
	seen, hidden := streamtest.MakeNode("pa", "a", "Pod"), streamtest.MakeNode("pb", "b", "Pod")
	v := restrictedView(t)
	cases := []struct {
		e    gc.Event
		keep bool
	}{
		{gc.Event{Type: gc.NodeAdded, Node: seen}, true},
		{gc.Event{Type: gc.NodeAdded, Node: hidden}, false},
		{gc.Event{Type: gc.EdgeAdded, Edge: &gc.Edge{Dependent: "pa", Owner: "x"}}, true},
		{gc.Event{Type: gc.EdgeAdded, Edge: &gc.Edge{Dependent: "pb", Owner: "x"}}, false},
		{streamtest.QueueEvent(seen.ObjectRef), true},
		{streamtest.QueueEvent(hidden.ObjectRef), false},
		{streamtest.ActionEvent(seen.ObjectRef), true},
		{streamtest.ActionEvent(hidden.ObjectRef), false},
		{streamtest.SyncEvent("v1/pods"), true},
		{gc.Event{Type: gc.ShadowChange, Shadow: &gc.ShadowDecision{Action: gc.Action{Object: hidden.ObjectRef}}}, false},
		{gc.Event{Type: gc.EdgeRemoved, Edge: &gc.Edge{Dependent: "pa", Owner: "x"}}, true},
		{gc.Event{Type: gc.NodeRemoved, Node: seen}, true},
		{gc.Event{Type: gc.NodeRemoved, Node: hidden}, false},
	}
	for i, c := range cases {
		c.e.Seq = uint64(i + 1)
		if _, keep, _ := v.filter(c.e); keep != c.keep {
			t.Errorf("%s event %d: kept %v, want %v", c.e.Type, c.e.Seq, keep, c.keep)
		}
	}
}

package stream

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/narrow"
	"github.com/gcscope/gcscope/server/stream/streamtest"
	"github.com/gcscope/gcscope/server/wire"
)

// summaryCounts reads a summary frame's objects per namespace.
func summaryCounts(t *testing.T, f streamtest.Frame) map[string]int {
	t.Helper()
	var s wire.Summary
	if err := json.Unmarshal(f.Raw, &s); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, ns := range s.Namespaces {
		out[ns.Name] = ns.Objects
	}
	return out
}

// A summary subscription that names nothing gets the graph counted and no object: a
// summary frame, then a snapshot without nodes; a new object is counted in a later
// summary, never sent. Naming a namespace brings its objects (a summary, then a snapshot
// of them) and then deltas of that namespace alone.
func TestStreamSummaryFirst(t *testing.T) {
	var bare, subsets atomic.Int32 // snapshots taken without the nodes, and of some namespaces
	var eng *streamtest.Engine
	e := newStreamEnv(t, 1024, Options{Bare: func() gc.Snapshot {
		bare.Add(1)
		s := eng.Snapshot()
		s.Nodes = []gc.NodeState{}
		return s
	}, Subset: func(namespaces []string, uids []types.UID) gc.Snapshot {
		subsets.Add(1)
		s := eng.Snapshot()
		keep := narrow.Closure(s.Nodes, uids)
		s.Nodes = slices.DeleteFunc(s.Nodes, func(n gc.NodeState) bool { return !keep[n.UID] && !slices.Contains(namespaces, n.Namespace) })
		return s
	}})
	eng = e.eng
	e.start(t)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("a-pod", "a", "Pod"))...)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("b-pod", "b", "Pod"))...)

	c := e.dial(t, "summary=true")
	f := c.next()
	if f.Type != "summary" {
		t.Fatalf("first frame %s, want a summary", f.Raw)
	}
	if got := summaryCounts(t, f); got["a"] != 1 || got["b"] != 1 || len(got) != 2 {
		t.Fatalf("first summary counts %v, want a:1 b:1", got)
	}
	snap := c.next()
	if snap.Type != "snapshot" || len(snap.Nodes) != 0 {
		t.Fatalf("second frame %s, want a snapshot without nodes", snap.Raw)
	}
	if bare.Load() != 1 {
		t.Errorf("the snapshot of a client that holds nothing was taken with the nodes (%d without)", bare.Load())
	}
	m := streamtest.NewModel()
	m.Apply(snap)

	last := e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("a-pod2", "a", "Pod"))...)
	for {
		f := c.next()
		if err := m.Apply(f); err != nil {
			t.Fatal(err)
		}
		for _, ev := range f.Events {
			if ev.Node != nil || ev.Edge != nil {
				t.Fatalf("a summary subscription naming nothing was sent %s", f.Raw)
			}
		}
		if f.Type == "summary" {
			if got := summaryCounts(t, f); got["a"] != 2 {
				t.Fatalf("the summary after a-pod2 counts %v, want a:2", got)
			}
			break
		}
	}

	c.send(map[string]any{"type": "subscribe", "summary": true, "namespaces": []string{"a"}})
	var types []string
	for snap.Reason != string(wire.ReasonSubscribe) {
		f := c.next()
		if f.Type == "summary" || f.Type == "snapshot" {
			types = append(types, f.Type)
		}
		if f.Type == "snapshot" {
			snap = f
		}
	}
	if !slices.Equal(types, []string{"summary", "snapshot"}) {
		t.Fatalf("after subscribing to a: %v, want a summary then a snapshot", types)
	}
	if got := nodeUIDs(snap.Nodes); !slices.Equal(got, []string{"a-pod", "a-pod2"}) {
		t.Fatalf("namespace a's snapshot: %v", got)
	}
	m.Apply(snap)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("b-pod2", "b", "Pod"))...)
	last = e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("a-pod3", "a", "Pod"))...)
	var sent []string
	for _, ev := range c.untilSeq(m, last) {
		if ev.Node != nil {
			sent = append(sent, string(ev.Node.UID))
		}
	}
	if !slices.Equal(sent, []string{"a-pod3"}) {
		t.Fatalf("namespace a's deltas named %v, want a-pod3 alone", sent)
	}
	if subsets.Load() != 1 {
		t.Errorf("the snapshot of namespace a was taken %d times from the engine's index, want once", subsets.Load())
	}

	// The names add up: namespace a, and the component of an object the page follows in
	// namespace b (its owner and its dependents), not the rest of b.
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("b-rs", "b", "ReplicaSet"))...)
	last = e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("b-pod3", "b", "Pod", "b-rs"))...)
	c.untilSeq(m, last)
	c.send(map[string]any{"type": "subscribe", "summary": true, "namespaces": []string{"a"}, "uids": []string{"b-pod3"}})
	for snap.Seq < last || snap.Reason != string(wire.ReasonSubscribe) || len(snap.Nodes) < 5 {
		if f := c.next(); f.Type == "snapshot" {
			snap = f
		}
	}
	if got := nodeUIDs(snap.Nodes); !slices.Equal(got, []string{"a-pod", "a-pod2", "a-pod3", "b-pod3", "b-rs"}) {
		t.Fatalf("namespace a and b-pod3's component: %v", got)
	}
	m.Apply(snap)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("b-pod4", "b", "Pod", "b-rs"))...)
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("b-pod5", "b", "Pod"))...)
	last = e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("a-pod4", "a", "Pod"))...)
	sent = nil
	for _, ev := range c.untilSeq(m, last) {
		if ev.Node != nil {
			sent = append(sent, string(ev.Node.UID))
		}
	}
	if !slices.Equal(sent, []string{"b-pod4", "a-pod4"}) {
		t.Fatalf("deltas of namespace a and b-pod3's component named %v, want b-pod4 (joins the component) and a-pod4", sent)
	}

	// A resume of a summary subscription of namespace a: a summary, then deltas of a
	// alone, what the client holds taken from the engine's index, not the whole graph.
	before := subsets.Load()
	r := e.dial(t, fmt.Sprintf("summary=true&namespace=a&since=%d", last))
	if f := r.next(); f.Type != "summary" {
		t.Fatalf("a resumed summary subscription's first frame: %s", f.Raw)
	}
	// The summary goes first; what the client holds is taken just after it.
	testkit.Eventually(t, "the resume to take what the client holds from the engine's index", func() bool { return subsets.Load() > before })
	if subsets.Load() != before+1 {
		t.Errorf("the resume took what the client holds %d times from the engine's index, want once", subsets.Load()-before)
	}
	rm := streamtest.NewModel()
	rm.Seq, rm.Started = last, true
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("b-pod6", "b", "Pod"))...)
	last = e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("a-pod5", "a", "Pod"))...)
	sent = nil
	for _, ev := range r.untilSeq(rm, last) {
		if ev.Node != nil {
			sent = append(sent, string(ev.Node.UID))
		}
	}
	if !slices.Equal(sent, []string{"a-pod5"}) {
		t.Fatalf("the resumed subscription's deltas named %v, want a-pod5 alone", sent)
	}
}

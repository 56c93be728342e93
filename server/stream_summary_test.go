package server

import (
	"encoding/json"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/gcscope/gcscope/gc"
)

// summaryCounts reads a summary frame's objects per namespace.
func summaryCounts(t *testing.T, f streamFrame) map[string]int {
	t.Helper()
	var s summaryResponse
	if err := json.Unmarshal(f.raw, &s); err != nil {
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
	var bare atomic.Int32 // snapshots taken without the nodes
	var eng *fakeEngine
	e := newStreamEnv(t, 1024, hubOptions{Bare: func() gc.Snapshot {
		bare.Add(1)
		s := eng.Snapshot()
		s.Nodes = []gc.NodeState{}
		return s
	}})
	eng = e.eng
	e.start(t)
	e.eng.publish(addNode(mkNode("a-pod", "a", "Pod"))...)
	e.eng.publish(addNode(mkNode("b-pod", "b", "Pod"))...)

	c := e.dial(t, "summary=true")
	f := c.next()
	if f.Type != "summary" {
		t.Fatalf("first frame %s, want a summary", f.raw)
	}
	if got := summaryCounts(t, f); got["a"] != 1 || got["b"] != 1 || len(got) != 2 {
		t.Fatalf("first summary counts %v, want a:1 b:1", got)
	}
	snap := c.next()
	if snap.Type != "snapshot" || len(snap.Nodes) != 0 {
		t.Fatalf("second frame %s, want a snapshot without nodes", snap.raw)
	}
	if bare.Load() != 1 {
		t.Errorf("the snapshot of a client that holds nothing was taken with the nodes (%d without)", bare.Load())
	}
	m := newStreamModel()
	m.apply(snap)

	last := e.eng.publish(addNode(mkNode("a-pod2", "a", "Pod"))...)
	for {
		f := c.next()
		if err := m.apply(f); err != nil {
			t.Fatal(err)
		}
		for _, ev := range f.Events {
			if ev.Node != nil || ev.Edge != nil {
				t.Fatalf("a summary subscription naming nothing was sent %s", f.raw)
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
	for snap.Reason != reasonSubscribe {
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
	m.apply(snap)
	e.eng.publish(addNode(mkNode("b-pod2", "b", "Pod"))...)
	last = e.eng.publish(addNode(mkNode("a-pod3", "a", "Pod"))...)
	var sent []string
	for _, ev := range c.untilSeq(m, last) {
		if ev.Node != nil {
			sent = append(sent, string(ev.Node.UID))
		}
	}
	if !slices.Equal(sent, []string{"a-pod3"}) {
		t.Fatalf("namespace a's deltas named %v, want a-pod3 alone", sent)
	}
}

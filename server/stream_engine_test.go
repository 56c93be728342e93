package server

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/stream"
)

// engineStreamClient applies the stream's frames to a local copy of the graph, as the UI does.
type engineStreamClient struct {
	t      *testing.T
	conn   *websocket.Conn
	mu     sync.Mutex
	seq    uint64
	nodes  map[types.UID]gc.NodeState
	events []gc.Event
}

func dialEngineStream(t *testing.T, base, query string) *engineStreamClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/api/v1/stream?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(64 << 20)
	c := &engineStreamClient{t: t, conn: conn, nodes: map[types.UID]gc.NodeState{}}
	go c.read()
	t.Cleanup(func() { conn.Close(websocket.StatusNormalClosure, "") })
	return c
}

func (c *engineStreamClient) read() {
	for {
		_, data, err := c.conn.Read(context.Background())
		if err != nil {
			return
		}
		var f struct {
			Type   string         `json:"type"`
			Seq    uint64         `json:"seq"`
			Nodes  []gc.NodeState `json:"nodes"`
			Events []gc.Event     `json:"events"`
		}
		if err := json.Unmarshal(data, &f); err != nil {
			c.t.Errorf("frame: %v", err)
			return
		}
		c.mu.Lock()
		switch f.Type {
		case "snapshot":
			c.nodes = map[types.UID]gc.NodeState{}
			for _, n := range f.Nodes {
				c.nodes[n.UID] = n
			}
		case "deltas":
			for _, e := range f.Events {
				switch e.Type {
				case gc.NodeAdded, gc.NodeUpdated:
					c.nodes[e.Node.UID] = *e.Node
				case gc.NodeRemoved:
					delete(c.nodes, e.Node.UID)
				}
				c.events = append(c.events, e)
			}
		}
		if f.Seq > c.seq {
			c.seq = f.Seq
		}
		c.mu.Unlock()
	}
}

// TestStreamFollowsTheRealEngineUnderChurn: while ConfigMaps are created, re-owned and
// deleted concurrently, a client's snapshot plus deltas, applied in order, equal the
// engine's snapshot once the churn settles; a foreground cascade then arrives as node and
// queue events ending with the owner's removal.
func TestStreamFollowsTheRealEngineUnderChurn(t *testing.T) {
	e := env(t)
	ts, _ := e.serve(t, Options{})
	ns := e.namespace(t)
	ctx := context.Background()
	all := dialEngineStream(t, ts.URL, "")
	mine := dialEngineStream(t, ts.URL, "namespace="+ns)

	var wg sync.WaitGroup
	var created atomic.Int32
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			var made []*corev1.ConfigMap
			for i := range 40 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("churn-%d-%d", w, i)}}
				if len(made) > 0 && rng.IntN(2) == 0 {
					o := made[rng.IntN(len(made))]
					cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: o.Name, UID: o.UID}}
				}
				got, err := e.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
				if err != nil {
					continue
				}
				made = append(made, got)
				created.Add(1)
				if rng.IntN(4) == 0 {
					victim := made[rng.IntN(len(made))]
					e.client.CoreV1().ConfigMaps(ns).Delete(ctx, victim.Name, metav1.DeleteOptions{})
				}
			}
		})
	}
	// A client connecting in the middle of the churn (of 160 creates).
	testkit.Eventually(t, "the churn to be under way", func() bool { return created.Load() >= 40 })
	late := dialEngineStream(t, ts.URL, "")
	wg.Wait()

	// Once the churn's cascades are done, there is a moment when both clients hold the
	// engine's state at the seq of its snapshot: what they hold then must be that state.
	var snap gc.Snapshot
	held := map[string]map[types.UID]gc.NodeState{}
	clients := map[string]*engineStreamClient{"from the start": all, "joined mid-churn": late}
	testkit.Eventually(t, "both clients to be at the seq of the engine's snapshot", func() bool {
		snap = e.engine.Snapshot()
		for name, c := range clients {
			c.mu.Lock()
			at := c.seq == snap.Seq
			held[name] = maps.Clone(c.nodes)
			c.mu.Unlock()
			if !at {
				return false
			}
		}
		return true
	})
	want := map[types.UID]gc.NodeState{}
	for _, n := range snap.Nodes {
		want[n.UID] = n
	}
	for name, nodes := range held {
		if !sameJSON(nodes, want) {
			t.Errorf("client %s: %d nodes at seq %d, the engine %d (state differs)", name, len(nodes), snap.Seq, len(want))
		}
	}
	// The real engine's graphChanges items (added, taken, forgotten, done) come and go
	// within frames: most of them arrive counted.
	all.mu.Lock()
	passed, transitions := 0, 0
	for _, ev := range all.events {
		if ev.Queue != nil && ev.Queue.Queue == gc.GraphChanges {
			if ev.Queue.Op == stream.QueuePassed {
				passed++
			} else {
				transitions++
			}
		}
	}
	all.mu.Unlock()
	if passed == 0 {
		t.Errorf("no graphChanges item arrived counted (%d transitions sent one by one)", transitions)
	}

	// The namespaced client is sent only its namespace's events, so its seq says little;
	// it must come to hold what the engine holds there once the collector is done (the
	// dependents of the churn's deleted owners may still be going when the others met the
	// snapshot above: each poll compares with the engine's state of the moment).
	var differs string
	if err := testkit.Poll(ctx, 2*time.Minute, func() bool {
		wantNS := map[types.UID]gc.NodeState{}
		for _, n := range e.engine.Snapshot().Nodes {
			if n.Namespace == ns {
				wantNS[n.UID] = n
			}
		}
		mine.mu.Lock()
		defer mine.mu.Unlock()
		differs = nodesDiffer(mine.nodes, wantNS)
		return differs == ""
	}); err != nil {
		t.Fatalf("the namespaced client does not hold what the engine holds in %s: %s", ns, differs)
	}

	// A foreground cascade, seen live.
	owner := e.configMap(t, ns, "cascade-owner", nil)
	child := e.configMap(t, ns, "cascade-child", nil, owner)
	mine.mu.Lock()
	from := len(mine.events)
	mine.mu.Unlock()
	fg := metav1.DeletePropagationForeground
	if err := e.client.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	// The worker's action can reach the stream after the informer's removal of the owner:
	// wait until every step is there (or the limit says which is missing).
	wants := []string{"owner deletingDependents", "owner queued", "child removed", "foregroundDeletion removed", "owner removed"}
	seen := map[string]bool{}
	shown := func() bool {
		mine.mu.Lock()
		defer mine.mu.Unlock()
		clear(seen)
		for _, ev := range mine.events[from:] {
			switch {
			case ev.Type == gc.NodeUpdated && ev.Node.UID == owner.UID && ev.Node.DeletingDependents:
				seen["owner deletingDependents"] = true
			case ev.Type == gc.NodeRemoved && ev.Node.UID == child.UID:
				seen["child removed"] = true
			case ev.Type == gc.NodeRemoved && ev.Node.UID == owner.UID:
				seen["owner removed"] = seen["child removed"]
			case ev.Type == gc.QueueChange && ev.Queue.Queue == gc.AttemptToDelete && ev.Queue.Object.UID == owner.UID:
				seen["owner queued"] = true
			case ev.Type == gc.ActionTaken && ev.Action.Verb == gc.VerbRemoveFinalizer && ev.Action.Object.UID == owner.UID:
				seen["foregroundDeletion removed"] = true
			}
		}
		for _, want := range wants {
			if !seen[want] {
				return false
			}
		}
		return true
	}
	if err := testkit.Poll(ctx, time.Minute, shown); err != nil {
		for _, want := range wants {
			if !seen[want] {
				t.Errorf("the stream did not show %q (after the child's removal for the owner's): %v", want, seen)
			}
		}
	}
}

// nodesDiffer says how a client's nodes differ from the engine's ("" when they do not),
// compared as the wire does.
func nodesDiffer(got, want map[types.UID]gc.NodeState) string {
	var out []string
	for uid, w := range want {
		g, ok := got[uid]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("missing %s/%s (%s)", w.Kind, w.Name, uid))
		case !sameJSON(map[types.UID]gc.NodeState{uid: g}, map[types.UID]gc.NodeState{uid: w}):
			gj, _ := json.Marshal(g)
			wj, _ := json.Marshal(w)
			out = append(out, fmt.Sprintf("%s/%s holds %s, the engine %s", w.Kind, w.Name, gj, wj))
		}
	}
	for uid, g := range got {
		if _, ok := want[uid]; !ok {
			out = append(out, fmt.Sprintf("extra %s/%s (%s)", g.Kind, g.Name, uid))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// sameJSON compares as the wire does (times to the second, no monotonic clock).
func sameJSON(a, b map[types.UID]gc.NodeState) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

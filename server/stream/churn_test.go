package stream

// The stream's property test: clients with random subscriptions follow a random churn,
// pausing and resuming, and always hold the engine's state through their filter.

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/narrow"
	"github.com/gcscope/gcscope/server/stream/streamtest"
)

// churnSub is a subscription of the property test and the filter it must amount to.
type churnSub struct {
	query string
	pass  func(n gc.NodeState) bool
	uids  []types.UID // a closure subscription
}

// TestStreamPropertyChurn: under concurrent churn, with clients connecting at random
// moments, pausing, and resuming with since, every client's state after every frame is
// the engine's state at that frame's seq, through the client's filter.
func TestStreamPropertyChurn(t *testing.T) {
	// Small socket buffers and client queues: clients that pause fall behind.
	e := newStreamEnv(t, 4096, Options{Buffer: 8})
	e.srv.Listener = streamtest.SmallBuffers{Listener: e.srv.Listener}
	e.start(t)
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	var rngMu sync.Mutex
	rnd := func(n int) int {
		rngMu.Lock()
		defer rngMu.Unlock()
		return rng.IntN(n)
	}
	namespaces := []string{"a", "b", "c", ""}
	kinds := []string{"Pod", "ReplicaSet", "Deployment"}
	e.eng.Publish(streamtest.AddNode(streamtest.MakeNode("seed", "a", "Deployment"))...)

	// The churn: random adds, updates (some moving a node to another namespace or kind,
	// as a virtual node's identity is corrected), removals, re-parenting, queue, action
	// and sync events.
	churnDone := make(chan struct{})
	go func() {
		defer close(churnDone)
		var live []types.UID
		live = append(live, "seed")
		for i := range 3000 {
			if i%10 == 0 {
				// Many batches, spread over the clients' connections and pauses.
				e.untilHandedOut(e.eng.LastSeq())
			}
			op := rnd(100)
			switch {
			case op < 35 || len(live) < 3:
				var owners []string
				for range rnd(3) {
					owners = append(owners, string(live[rnd(len(live))]))
				}
				n := streamtest.MakeNode("n"+strconv.Itoa(i), namespaces[rnd(4)], kinds[rnd(3)], owners...)
				e.eng.Publish(streamtest.AddNode(n)...)
				live = append(live, n.UID)
			case op < 70:
				uid := live[rnd(len(live))]
				cur, _ := e.eng.Node(uid)
				n := cur
				n.Finalizers = []string{"f" + strconv.Itoa(i)}
				if rnd(10) == 0 {
					n.Namespace = namespaces[rnd(4)]
				}
				if rnd(10) == 0 {
					n.Kind = kinds[rnd(3)]
				}
				evs := []gc.Event{}
				if rnd(5) == 0 {
					o := live[rnd(len(live))]
					if o != uid {
						n.Owners = append(slices.Clone(n.Owners), gc.OwnerRef{Kind: "ReplicaSet", UID: o})
						evs = append(evs, gc.Event{Type: gc.EdgeAdded, Edge: &gc.Edge{Dependent: uid, Owner: o}})
					}
				}
				evs = append(evs, gc.Event{Type: gc.NodeUpdated, Node: &n})
				e.eng.Publish(evs...)
			case op < 88:
				k := 1 + rnd(len(live)-1) // the seed stays, for the closure subscription
				cur, _ := e.eng.Node(live[k])
				live = slices.Delete(live, k, k+1)
				e.eng.Publish(streamtest.RemoveNode(&cur)...)
			case op < 94:
				cur, _ := e.eng.Node(live[rnd(len(live))])
				e.eng.Publish(streamtest.QueueEvent(cur.ObjectRef))
			case op < 99:
				cur, _ := e.eng.Node(live[rnd(len(live))])
				e.eng.Publish(streamtest.ActionEvent(cur.ObjectRef))
			default:
				e.eng.Publish(streamtest.SyncEvent("v1/pods", strconv.Itoa(i)))
			}
		}
	}()

	subs := []churnSub{
		{query: "", pass: func(gc.NodeState) bool { return true }},
		{query: "queues=false", pass: func(gc.NodeState) bool { return true }},
		{query: "namespace=a", pass: func(n gc.NodeState) bool { return n.Namespace == "a" }},
		{query: "namespace=b&namespace=&kind=Pod", pass: func(n gc.NodeState) bool {
			return (n.Namespace == "b" || n.Namespace == "") && n.Kind == "Pod"
		}},
		{query: "kind=replicaset", pass: func(n gc.NodeState) bool { return n.Kind == "ReplicaSet" }},
		{query: "uid=seed", uids: []types.UID{"seed"}},
		{query: "", pass: func(gc.NodeState) bool { return true }},
		{query: "namespace=c", pass: func(n gc.NodeState) bool { return n.Namespace == "c" }},
	}
	var wg sync.WaitGroup
	for i, sub := range subs {
		wg.Go(func() {
			e.untilPublished(uint64(rnd(3000)), churnDone) // join at a random point of the churn
			churnClient(t, e, i, sub, rnd, churnDone)
		})
	}
	wg.Wait()
}

// churnClient follows the stream as one client of the property test: it checks every
// frame against the engine's history, pauses now and then, and reconnects with since.
func churnClient(t *testing.T, e *streamEnv, id int, sub churnSub, rnd func(int) int, churnDone <-chan struct{}) {
	m := streamtest.NewModel()
	replay := map[types.UID]gc.NodeState{} // the engine's state at replayed
	var replayed uint64
	var history []gc.Event
	check := func(f streamtest.Frame) error {
		for _, ev := range f.Events {
			if ev.Type == gc.NodeAdded || ev.Type == gc.NodeUpdated {
				if sub.pass != nil && !sub.pass(*ev.Node) {
					return fmt.Errorf("received %s of %s outside the filter", ev.Type, ev.Node.UID)
				}
			}
			if !strings.Contains(sub.query, "queues=false") {
				continue
			}
			if ev.Queue != nil || ev.Action != nil {
				return fmt.Errorf("queues=false received %s", ev.Type)
			}
		}
		if err := m.Apply(f); err != nil {
			return err
		}
		if f.Type != "snapshot" && f.Type != "deltas" {
			return nil
		}
		for replayed < m.Seq {
			if int(replayed) >= len(history) {
				history = e.eng.History()
			}
			streamtest.ApplyEvent(replay, history[replayed])
			replayed++
		}
		if sub.uids != nil {
			// The client holds the closure of its uids, possibly with objects that have
			// left it since, each as the engine has it.
			for uid, n := range m.Nodes {
				if want, ok := replay[uid]; !ok || !equalNode(n, want) {
					return fmt.Errorf("seq %d: holds %s as %+v, engine has %+v (%v)", m.Seq, uid, n, want, ok)
				}
			}
			all := slices.Collect(maps.Values(replay))
			for uid := range narrow.Closure(all, sub.uids) {
				if _, ok := replay[uid]; ok && m.Nodes[uid].UID == "" {
					return fmt.Errorf("seq %d: closure member %s missing", m.Seq, uid)
				}
			}
			return nil
		}
		want := map[types.UID]gc.NodeState{}
		for uid, n := range replay {
			if sub.pass(n) {
				want[uid] = n
			}
		}
		if len(want) != len(m.Nodes) {
			return fmt.Errorf("seq %d (%s): client holds %d nodes, engine %d through the filter\nclient %v\nengine %v",
				m.Seq, f.Type, len(m.Nodes), len(want), uidsOf(m.Nodes), uidsOf(want))
		}
		for uid, n := range want {
			if got, ok := m.Nodes[uid]; !ok || !equalNode(got, n) {
				return fmt.Errorf("seq %d: %s is %+v, engine %+v", m.Seq, uid, got, n)
			}
		}
		return nil
	}

	query := sub.query
	for conn := 0; ; conn++ {
		var opts *websocket.DialOptions
		if id%2 == 0 {
			opts = streamtest.SmallReadBufferDialer()
		}
		ws := e.dialWith(t, query, opts)
		reconnect := false
		for !reconnect {
			f, err := ws.read()
			if err != nil {
				t.Errorf("client %d (%s): %v", id, sub.query, err)
				return
			}
			if err := check(f); err != nil {
				t.Errorf("client %d (%s): %v", id, sub.query, err)
				return
			}
			select {
			case <-churnDone:
				if m.Seq == e.eng.LastSeq() {
					ws.conn.Close(websocket.StatusNormalClosure, "")
					t.Logf("client %d (%s): %d connections, frames %v, %d nodes at seq %d", id, sub.query, conn+1, m.Frames, len(m.Nodes), m.Seq)
					return
				}
			default:
				switch rnd(20) {
				case 0: // stop reading while the churn moves on
					e.untilPublished(e.eng.LastSeq()+uint64(20+rnd(200)), churnDone)
				case 1: // go away and come back with since
					reconnect = conn < 5
				}
			}
		}
		ws.conn.Close(websocket.StatusNormalClosure, "")
		q := "since=" + strconv.FormatUint(m.Seq, 10)
		if sub.query != "" {
			q = sub.query + "&" + q
		}
		query = q
	}
}

func equalNode(a, b gc.NodeState) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

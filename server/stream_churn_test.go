package server

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
	e := newStreamEnv(t, 4096, hubOptions{Buffer: 8})
	e.srv.Listener = smallBuffers{e.srv.Listener}
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
	e.eng.publish(addNode(mkNode("seed", "a", "Deployment"))...)

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
				n := mkNode("n"+strconv.Itoa(i), namespaces[rnd(4)], kinds[rnd(3)], owners...)
				e.eng.publish(addNode(n)...)
				live = append(live, n.UID)
			case op < 70:
				uid := live[rnd(len(live))]
				cur, _ := e.eng.node(uid)
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
				e.eng.publish(evs...)
			case op < 88:
				k := 1 + rnd(len(live)-1) // the seed stays, for the closure subscription
				cur, _ := e.eng.node(live[k])
				live = slices.Delete(live, k, k+1)
				e.eng.publish(removeNode(&cur)...)
			case op < 94:
				cur, _ := e.eng.node(live[rnd(len(live))])
				e.eng.publish(queueEvent(cur.ObjectRef))
			case op < 99:
				cur, _ := e.eng.node(live[rnd(len(live))])
				e.eng.publish(actionEvent(cur.ObjectRef))
			default:
				e.eng.publish(syncEvent("v1/pods", strconv.Itoa(i)))
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
	m := newStreamModel()
	replay := map[types.UID]gc.NodeState{} // the engine's state at replayed
	var replayed uint64
	var history []gc.Event
	check := func(f streamFrame) error {
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
		if err := m.apply(f); err != nil {
			return err
		}
		if f.Type != "snapshot" && f.Type != "deltas" {
			return nil
		}
		for replayed < m.seq {
			if int(replayed) >= len(history) {
				history = e.eng.history()
			}
			applyEvent(replay, history[replayed])
			replayed++
		}
		if sub.uids != nil {
			// The client holds the closure of its uids, possibly with objects that have
			// left it since, each as the engine has it.
			for uid, n := range m.nodes {
				if want, ok := replay[uid]; !ok || !equalNode(n, want) {
					return fmt.Errorf("seq %d: holds %s as %+v, engine has %+v (%v)", m.seq, uid, n, want, ok)
				}
			}
			all := slices.Collect(maps.Values(replay))
			for uid := range narrow.Closure(all, sub.uids) {
				if _, ok := replay[uid]; ok && m.nodes[uid].UID == "" {
					return fmt.Errorf("seq %d: closure member %s missing", m.seq, uid)
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
		if len(want) != len(m.nodes) {
			return fmt.Errorf("seq %d (%s): client holds %d nodes, engine %d through the filter\nclient %v\nengine %v",
				m.seq, f.Type, len(m.nodes), len(want), uidsOf(m.nodes), uidsOf(want))
		}
		for uid, n := range want {
			if got, ok := m.nodes[uid]; !ok || !equalNode(got, n) {
				return fmt.Errorf("seq %d: %s is %+v, engine %+v", m.seq, uid, got, n)
			}
		}
		return nil
	}

	query := sub.query
	for conn := 0; ; conn++ {
		var opts *websocket.DialOptions
		if id%2 == 0 {
			opts = smallReadBufferDialer()
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
				if m.seq == e.eng.LastSeq() {
					ws.conn.Close(websocket.StatusNormalClosure, "")
					t.Logf("client %d (%s): %d connections, frames %v, %d nodes at seq %d", id, sub.query, conn+1, m.frames, len(m.nodes), m.seq)
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
		q := "since=" + strconv.FormatUint(m.seq, 10)
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

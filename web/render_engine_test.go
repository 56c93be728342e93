package web_test

// A stand-in for the garbage-collector engine for the UI render benchmark: a synthetic
// graph of realistic shape, held in memory, with a real gc.Feed for its events. It
// implements registry.Engine, so the real server serves it, and needs no apiserver.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/registry"
)

var _ registry.Engine = (*synthEngine)(nil)

// synthEngine holds the graph and its feed, changed together under one lock so that a
// snapshot is always the state at its sequence number, as the engine guarantees.
type synthEngine struct {
	mu       sync.Mutex
	feed     *gc.Feed
	nodes    map[types.UID]*gc.NodeState
	queues   map[gc.QueueName]map[types.UID]*gc.QueueItem
	adds     map[gc.QueueName]uint64
	registry *prometheus.Registry
	sync     gc.SyncState
	// The engine's indexes, as the real one keeps them: each namespace's nodes and each
	// owner's dependents (SnapshotOf), and each namespace's counts, redone when it changed
	// (Summary).
	byNS    map[string]map[types.UID]*gc.NodeState
	deps    map[types.UID]map[types.UID]bool
	counted map[string][]gc.SummaryGroup
	recount map[string]bool
}

// synthQueues are the engine's queues, in the order a snapshot lists them.
var synthQueues = []gc.QueueName{gc.GraphChanges, gc.AttemptToDelete, gc.AttemptToOrphan}

func newSynthEngine() *synthEngine {
	e := &synthEngine{
		feed:     gc.NewFeed(0),
		nodes:    map[types.UID]*gc.NodeState{},
		queues:   map[gc.QueueName]map[types.UID]*gc.QueueItem{},
		adds:     map[gc.QueueName]uint64{},
		registry: prometheus.NewRegistry(),
		byNS:     map[string]map[types.UID]*gc.NodeState{},
		deps:     map[types.UID]map[types.UID]bool{},
		counted:  map[string][]gc.SummaryGroup{},
		recount:  map[string]bool{},
		sync: gc.SyncState{Resources: []string{
			"apps/v1/controllerrevisions", "apps/v1/deployments", "apps/v1/replicasets", "apps/v1/statefulsets",
			"batch/v1/cronjobs", "batch/v1/jobs", "discovery.k8s.io/v1/endpointslices",
			"rbac.authorization.k8s.io/v1/clusterroles", "v1/configmaps", "v1/namespaces", "v1/nodes",
			"v1/persistentvolumeclaims", "v1/pods", "v1/secrets", "v1/serviceaccounts", "v1/services",
		}},
	}
	for _, q := range synthQueues {
		e.queues[q] = map[types.UID]*gc.QueueItem{}
	}
	return e
}

// publish applies events to the graph and appends them to the feed, as one step.
func (e *synthEngine) publish(events ...gc.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	for _, ev := range events {
		switch ev.Type {
		case gc.NodeAdded, gc.NodeUpdated:
			n := *ev.Node
			e.unindex(n.UID)
			e.nodes[n.UID] = &n
			e.index(&n)
		case gc.NodeRemoved:
			e.unindex(ev.Node.UID)
			delete(e.nodes, ev.Node.UID)
		case gc.QueueChange:
			q := ev.Queue
			items := e.queues[q.Queue]
			it := items[q.Object.UID]
			switch q.Op {
			case gc.QueueAdded:
				e.adds[q.Queue]++
				if it == nil {
					it = &gc.QueueItem{Object: q.Object, Change: q.Change, Since: now}
					items[q.Object.UID] = it
				}
				it.Queued = true
			case gc.QueueTaken:
				if it != nil {
					it.Queued, it.InFlight, it.Since = false, true, now
				}
			case gc.QueueDone:
				delete(items, q.Object.UID)
			}
		}
	}
	e.feed.Publish(events...)
}

func (e *synthEngine) Snapshot() gc.Snapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.bare()
	s.Nodes = make([]gc.NodeState, 0, len(e.nodes))
	for _, n := range e.nodes {
		s.Nodes = append(s.Nodes, *n)
	}
	slices.SortFunc(s.Nodes, func(a, b gc.NodeState) int { return strings.Compare(string(a.UID), string(b.UID)) })
	return s
}

// SnapshotWithoutNodes is Snapshot for a client that holds no object.
func (e *synthEngine) SnapshotWithoutNodes() gc.Snapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.bare()
}

// bare is the snapshot without its nodes. Requires e.mu.
func (e *synthEngine) bare() gc.Snapshot {
	s := gc.Snapshot{Seq: e.feed.LastSeq(), Mode: gc.ModeActive, Sync: e.sync, Nodes: []gc.NodeState{}}
	for _, name := range synthQueues {
		q := gc.QueueState{Name: name, Adds: e.adds[name]}
		for _, it := range e.queues[name] {
			if it.Queued {
				q.Depth++
			}
			if it.InFlight {
				q.InFlight++
			}
			q.Items = append(q.Items, *it)
		}
		slices.SortFunc(q.Items, func(a, b gc.QueueItem) int { return strings.Compare(string(a.Object.UID), string(b.Object.UID)) })
		s.Queues = append(s.Queues, q)
	}
	return s
}

// dependents lists the nodes that name uid as an owner. Requires e.mu.
func (e *synthEngine) dependents(uid types.UID) []gc.ObjectRef {
	var deps []gc.ObjectRef
	for _, n := range e.nodes {
		for _, o := range n.Owners {
			if o.UID == uid {
				deps = append(deps, n.ObjectRef)
			}
		}
	}
	slices.SortFunc(deps, func(a, b gc.ObjectRef) int { return strings.Compare(string(a.UID), string(b.UID)) })
	return deps
}

func (e *synthEngine) Node(uid types.UID) (gc.NodeDetail, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := e.nodes[uid]
	if !ok {
		return gc.NodeDetail{}, false
	}
	return gc.NodeDetail{NodeState: *n, Dependents: e.dependents(uid)}, true
}

func (e *synthEngine) ExplainFor(uid types.UID, _ func(gc.ObjectRef) bool) (gc.Explanation, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := e.nodes[uid]
	if !ok {
		return gc.Explanation{}, false
	}
	// As the engine explains it, from this graph: every owner exists, every kind is served.
	ex := gc.Explanation{Object: *n, Dependents: e.dependents(uid)}
	for _, o := range n.Owners {
		ex.Owners = append(ex.Owners, gc.OwnerStatus{OwnerRef: o, State: gc.OwnerSolid, Reason: "exists"})
	}
	if n.DeletingDependents {
		for _, d := range ex.Dependents {
			dn := e.nodes[d.UID]
			if !slices.ContainsFunc(dn.Owners, func(o gc.OwnerRef) bool { return o.UID == uid && o.BlockOwnerDeletion }) {
				continue
			}
			it := e.queues[gc.AttemptToDelete][d.UID]
			ex.Blockers = append(ex.Blockers, gc.Blocker{Object: d, Finalizers: slices.Clone(dn.Finalizers),
				BeingDeleted: dn.BeingDeleted, DeletingDependents: dn.DeletingDependents, InFlight: it != nil && it.InFlight})
		}
	}
	for _, f := range n.Finalizers {
		if f != metav1.FinalizerDeleteDependents && f != metav1.FinalizerOrphanDependents {
			ex.HeldBy = append(ex.HeldBy, f)
		}
	}
	for _, name := range synthQueues {
		if it, ok := e.queues[name][uid]; ok {
			ex.Queues = append(ex.Queues, gc.QueuePosition{Queue: name, QueueItem: *it})
		}
	}
	ex.Narrate(func(string, string) bool { return true }, time.Now())
	return ex, true
}

func (e *synthEngine) PredictDelete(uid types.UID, policy metav1.DeletionPropagation) (gc.Prediction, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := e.nodes[uid]
	if !ok || n.Virtual {
		return gc.Prediction{}, false
	}
	p := gc.Prediction{Target: n.ObjectRef, Policy: string(policy),
		Deleted: []gc.PredictedObject{{Object: n.ObjectRef, Reason: "the target"}}}
	for _, d := range e.dependents(uid) {
		if policy == metav1.DeletePropagationOrphan {
			p.Orphaned = append(p.Orphaned, gc.PredictedObject{Object: d, Reason: "orphaned"})
		} else {
			p.Deleted = append(p.Deleted, gc.PredictedObject{Object: d, Reason: "owned by the target"})
		}
	}
	return p, true
}

func (e *synthEngine) Feed() *gc.Feed                 { return e.feed }
func (e *synthEngine) Registry() *prometheus.Registry { return e.registry }
func (e *synthEngine) Mode() gc.Mode                  { return gc.ModeActive }
func (e *synthEngine) ActionDelay() time.Duration     { return 0 }

func (e *synthEngine) SyncState() gc.SyncState {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sync
}

// graphBuilder makes a synthetic cluster of exactly n objects: namespaces of about 200
// objects each (Deployments with a current and an old ReplicaSet and their Pods,
// StatefulSets with a ControllerRevision, Pods and PVCs, a CronJob with Jobs and Pods,
// Services with EndpointSlices, ConfigMaps with and without owners, Secrets, a
// ServiceAccount, an object held by a finalizer, one with a dangling owner), the
// Namespace objects and a few other cluster-scoped objects (Nodes, ClusterRoles).
type graphBuilder struct {
	n     int
	seq   uint64
	nodes []gc.NodeState
	pods  []types.UID // every Pod, for the mutations to pick from
	// replicaSets are the current ReplicaSets, which new Pods are given to.
	replicaSets []gc.ObjectRef
}

// uid makes a deterministic, well-spread uid (sorted by uid, the snapshot is not in
// creation order, as with real uids).
func (g *graphBuilder) uid() types.UID {
	g.seq++
	z := g.seq * 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return types.UID(fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", z>>32, (z>>16)&0xffff, z&0xfff, g.seq>>48&0xfff, g.seq&0xffffffffffff))
}

func (g *graphBuilder) full() bool { return len(g.nodes) >= g.n }

// add adds an object (unless the graph is full) and returns its reference.
func (g *graphBuilder) add(apiVersion, kind, namespace, name string, owners ...gc.ObjectRef) (gc.ObjectRef, bool) {
	if g.full() {
		return gc.ObjectRef{}, false
	}
	ref := gc.ObjectRef{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name, UID: g.uid()}
	n := gc.NodeState{ObjectRef: ref, Observed: true}
	for i, o := range owners {
		n.Owners = append(n.Owners, gc.OwnerRef{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: o.UID,
			Controller: i == 0, BlockOwnerDeletion: i == 0})
	}
	g.nodes = append(g.nodes, n)
	if kind == "Pod" {
		g.pods = append(g.pods, ref.UID)
	}
	return ref, true
}

func buildGraph(n int) *graphBuilder {
	g := &graphBuilder{n: n}
	for i := range 4 {
		g.add("v1", "Node", "", fmt.Sprintf("node-%d", i))
	}
	for _, name := range []string{"admin", "edit", "view", "system:aggregate-to-view"} {
		g.add("rbac.authorization.k8s.io/v1", "ClusterRole", "", name)
	}
	for ns := 0; !g.full(); ns++ {
		g.namespace(fmt.Sprintf("team-%03d", ns))
	}
	return g
}

// namespace adds one namespace of about 200 objects.
func (g *graphBuilder) namespace(ns string) {
	g.add("v1", "Namespace", "", ns)
	g.add("v1", "ServiceAccount", ns, "default")
	var deployments []gc.ObjectRef
	for d := range 12 {
		name := fmt.Sprintf("app-%d", d)
		dep, ok := g.add("apps/v1", "Deployment", ns, name)
		if !ok {
			return
		}
		deployments = append(deployments, dep)
		g.add("apps/v1", "ReplicaSet", ns, name+"-5f7c9d", dep) // the previous revision, scaled to 0
		cur, ok := g.add("apps/v1", "ReplicaSet", ns, name+"-7d4b8f", dep)
		if !ok {
			return
		}
		g.replicaSets = append(g.replicaSets, cur)
		for p := range 4 {
			g.add("v1", "Pod", ns, fmt.Sprintf("%s-7d4b8f-%05d", name, p), cur)
		}
	}
	for s := range 3 {
		name := fmt.Sprintf("db-%d", s)
		sts, ok := g.add("apps/v1", "StatefulSet", ns, name)
		if !ok {
			return
		}
		g.add("apps/v1", "ControllerRevision", ns, name+"-6b9f", sts)
		for p := range 5 {
			g.add("v1", "Pod", ns, fmt.Sprintf("%s-%d", name, p), sts)
			g.add("v1", "PersistentVolumeClaim", ns, fmt.Sprintf("data-%s-%d", name, p), sts)
		}
	}
	if cj, ok := g.add("batch/v1", "CronJob", ns, "nightly"); ok {
		for j := range 2 {
			job, ok := g.add("batch/v1", "Job", ns, fmt.Sprintf("nightly-2934%02d", j), cj)
			if !ok {
				return
			}
			for p := range 2 {
				g.add("v1", "Pod", ns, fmt.Sprintf("nightly-2934%02d-%05d", j, p), job)
			}
		}
	}
	for s := range 5 {
		svc, ok := g.add("v1", "Service", ns, fmt.Sprintf("svc-%d", s))
		if !ok {
			return
		}
		g.add("discovery.k8s.io/v1", "EndpointSlice", ns, fmt.Sprintf("svc-%d-x7k2p", s), svc)
	}
	for c := range 20 {
		g.add("v1", "ConfigMap", ns, fmt.Sprintf("app-%d-config", c), deployments[c%len(deployments)])
	}
	// One ConfigMap with two owners, one held by a finalizer while being deleted, one
	// whose owner was never observed (a virtual node).
	g.add("v1", "ConfigMap", ns, "shared-config", deployments[0], deployments[1])
	if _, ok := g.add("v1", "ConfigMap", ns, "held"); ok {
		n := &g.nodes[len(g.nodes)-1]
		ts := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
		n.Finalizers, n.BeingDeleted, n.DeletionTimestamp = []string{"example.com/hold"}, true, &ts
	}
	if ghost, ok := g.add("apps/v1", "Deployment", ns, "gone"); ok {
		n := &g.nodes[len(g.nodes)-1]
		n.Virtual, n.Observed = true, false
		g.add("v1", "ConfigMap", ns, "orphan-config", ghost)
	}
	for c := 0; c < 27 && !g.full(); c++ {
		g.add("v1", "ConfigMap", ns, fmt.Sprintf("settings-%d", c))
	}
	for s := 0; s < 10 && !g.full(); s++ {
		g.add("v1", "Secret", ns, fmt.Sprintf("secret-%d", s))
	}
}

// load publishes the graph as NodeAdded and EdgeAdded events, as the engine's first
// sync does, in batches.
func (e *synthEngine) load(g *graphBuilder) {
	var batch []gc.Event
	for i := range g.nodes {
		n := g.nodes[i]
		batch = append(batch, gc.Event{Type: gc.NodeAdded, Node: &n})
		for _, o := range n.Owners {
			batch = append(batch, gc.Event{Type: gc.EdgeAdded, Edge: &gc.Edge{Dependent: n.UID, Owner: o.UID,
				Controller: o.Controller, BlockOwnerDeletion: o.BlockOwnerDeletion}})
		}
		if len(batch) >= 1024 {
			e.publish(batch...)
			batch = batch[:0]
		}
	}
	e.publish(batch...)
}

// mutator makes the benchmark's stream of changes: Pods and ConfigMaps flipping between
// being deleted (with a finalizer) and not, Pods added to and removed from ReplicaSets,
// and graphChanges queue transitions. Not safe for concurrent use.
type mutator struct {
	e       *synthEngine
	g       *graphBuilder
	rng     *rand.Rand
	pods    []types.UID
	queue   []gc.ObjectRef // graphChanges items added, then taken, then done
	taken   []gc.ObjectRef
	created int
}

func newMutator(e *synthEngine, g *graphBuilder) *mutator {
	return &mutator{e: e, g: g, rng: rand.New(rand.NewPCG(1, 2)), pods: slices.Clone(g.pods)}
}

// next returns the events of the next mutation (one to three events).
func (m *mutator) next() []gc.Event {
	switch r := m.rng.IntN(100); {
	case r < 40 && len(m.pods) > 0: // flip beingDeleted and a finalizer
		m.e.mu.Lock()
		n, ok := m.e.nodes[m.pods[m.rng.IntN(len(m.pods))]]
		var s gc.NodeState
		if ok {
			s = *n
		}
		m.e.mu.Unlock()
		if !ok {
			return nil
		}
		if s.BeingDeleted {
			s.BeingDeleted, s.DeletionTimestamp, s.Finalizers = false, nil, nil
		} else {
			now := time.Now().UTC()
			s.BeingDeleted, s.DeletionTimestamp, s.Finalizers = true, &now, []string{"example.com/hold"}
		}
		return []gc.Event{{Type: gc.NodeUpdated, Node: &s}}
	case r < 55 && len(m.g.replicaSets) > 0: // a new Pod of a ReplicaSet
		rs := m.g.replicaSets[m.rng.IntN(len(m.g.replicaSets))]
		m.created++
		ref := gc.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: rs.Namespace,
			Name: fmt.Sprintf("%s-new%05d", rs.Name, m.created), UID: m.g.uid()}
		owner := gc.OwnerRef{APIVersion: rs.APIVersion, Kind: rs.Kind, Name: rs.Name, UID: rs.UID,
			Controller: true, BlockOwnerDeletion: true}
		m.pods = append(m.pods, ref.UID)
		return []gc.Event{
			{Type: gc.NodeAdded, Node: &gc.NodeState{ObjectRef: ref, Owners: []gc.OwnerRef{owner}, Observed: true}},
			{Type: gc.EdgeAdded, Edge: &gc.Edge{Dependent: ref.UID, Owner: rs.UID, Controller: true, BlockOwnerDeletion: true}},
		}
	case r < 70 && len(m.pods) > 0: // a Pod goes away
		i := m.rng.IntN(len(m.pods))
		uid := m.pods[i]
		m.pods[i] = m.pods[len(m.pods)-1]
		m.pods = m.pods[:len(m.pods)-1]
		m.e.mu.Lock()
		n, ok := m.e.nodes[uid]
		var s gc.NodeState
		if ok {
			s = *n
		}
		m.e.mu.Unlock()
		if !ok {
			return nil
		}
		events := []gc.Event{{Type: gc.NodeRemoved, Node: &s}}
		for _, o := range s.Owners {
			events = append(events, gc.Event{Type: gc.EdgeRemoved, Edge: &gc.Edge{Dependent: uid, Owner: o.UID,
				Controller: o.Controller, BlockOwnerDeletion: o.BlockOwnerDeletion}})
		}
		return events
	default: // a graphChanges transition
		switch {
		case len(m.taken) > 0 && m.rng.IntN(2) == 0:
			ref := m.taken[0]
			m.taken = m.taken[1:]
			return []gc.Event{{Type: gc.QueueChange, Queue: &gc.QueueEvent{Queue: gc.GraphChanges, Op: gc.QueueDone, Object: ref}}}
		case len(m.queue) > 0 && m.rng.IntN(2) == 0:
			ref := m.queue[0]
			m.queue = m.queue[1:]
			m.taken = append(m.taken, ref)
			return []gc.Event{{Type: gc.QueueChange, Queue: &gc.QueueEvent{Queue: gc.GraphChanges, Op: gc.QueueTaken, Object: ref}}}
		default:
			ref := m.g.nodes[m.rng.IntN(len(m.g.nodes))].ObjectRef
			if slices.ContainsFunc(m.queue, func(r gc.ObjectRef) bool { return r.UID == ref.UID }) ||
				slices.ContainsFunc(m.taken, func(r gc.ObjectRef) bool { return r.UID == ref.UID }) {
				return nil
			}
			m.queue = append(m.queue, ref)
			return []gc.Event{{Type: gc.QueueChange, Queue: &gc.QueueEvent{Queue: gc.GraphChanges, Op: gc.QueueAdded, Object: ref, Change: "update"}}}
		}
	}
}

// TestSyntheticGraph checks the benchmark's graph: exactly n objects, every owner in the
// graph, namespaces of about 200 objects, a snapshot consistent with the feed, and
// mutations that keep it so.
func TestSyntheticGraph(t *testing.T) {
	const n = 10_000
	g := buildGraph(n)
	e := newSynthEngine()
	e.load(g)
	snap := e.Snapshot()
	if len(snap.Nodes) != n {
		t.Fatalf("snapshot has %d nodes, want %d", len(snap.Nodes), n)
	}
	byUID := map[types.UID]gc.NodeState{}
	perNS := map[string]int{}
	clusterScoped := 0
	for _, s := range snap.Nodes {
		byUID[s.UID] = s
		if s.Namespace == "" {
			clusterScoped++
		} else {
			perNS[s.Namespace]++
		}
	}
	for _, s := range snap.Nodes {
		for _, o := range s.Owners {
			if _, ok := byUID[o.UID]; !ok {
				t.Errorf("%s %s/%s names owner %s, which is not in the graph", s.Kind, s.Namespace, s.Name, o.UID)
			}
		}
	}
	for ns, c := range perNS {
		if (c < 180 || c > 220) && ns != g.nodes[len(g.nodes)-1].Namespace {
			t.Errorf("namespace %s has %d objects, want about 200", ns, c)
		}
	}
	if want := len(perNS) + 8; clusterScoped != want {
		t.Errorf("%d cluster-scoped objects, want %d (the namespaces, 4 nodes, 4 cluster roles)", clusterScoped, want)
	}
	t.Logf("%d objects: %d namespaces, %d pods, %d cluster-scoped", n, len(perNS), len(g.pods), clusterScoped)

	// Mutations: the snapshot after them is the snapshot before them with the events applied.
	m := newMutator(e, g)
	var published []gc.Event
	for range 2000 {
		evs := m.next()
		e.publish(evs...)
		published = append(published, evs...)
	}
	after := e.Snapshot()
	if after.Seq != snap.Seq+uint64(len(published)) {
		t.Fatalf("seq %d after %d events from %d", after.Seq, len(published), snap.Seq)
	}
	for _, ev := range published {
		switch ev.Type {
		case gc.NodeAdded, gc.NodeUpdated:
			byUID[ev.Node.UID] = *ev.Node
		case gc.NodeRemoved:
			delete(byUID, ev.Node.UID)
		}
	}
	if len(after.Nodes) != len(byUID) {
		t.Fatalf("after the mutations: %d nodes, replaying the events gives %d", len(after.Nodes), len(byUID))
	}
	for _, s := range after.Nodes {
		if r, ok := byUID[s.UID]; !ok || r.BeingDeleted != s.BeingDeleted {
			t.Fatalf("node %s differs from the replayed events", s.UID)
		}
	}
	held, err := e.feed.Since(snap.Seq, 0)
	if err != nil || len(held) != len(published) {
		t.Fatalf("the feed holds %d events after the snapshot (%v), want %d", len(held), err, len(published))
	}
}

// cascadeOwner adds a namespace holding one ConfigMap with dependents blocking
// dependents (ConfigMaps naming it with blockOwnerDeletion), the owner already deleted in
// the foreground and waiting for them, and returns the owner and the dependents. The
// graph may hold more than n objects after it.
func (g *graphBuilder) cascadeOwner(dependents int) (gc.ObjectRef, []gc.NodeState) {
	const ns = "cascade"
	g.n += dependents + 2
	g.add("v1", "Namespace", "", ns)
	owner, _ := g.add("v1", "ConfigMap", ns, "big")
	o := &g.nodes[len(g.nodes)-1]
	ts := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	o.Finalizers, o.BeingDeleted, o.DeletingDependents, o.DeletionTimestamp = []string{metav1.FinalizerDeleteDependents}, true, true, &ts
	var deps []gc.NodeState
	for i := range dependents {
		g.add("v1", "ConfigMap", ns, fmt.Sprintf("part-%04d", i), owner)
		deps = append(deps, g.nodes[len(g.nodes)-1])
	}
	return owner, deps
}

// cascader makes the events of a foreground cascade, as the engine publishes them: each
// dependent is added to attemptToDelete and taken by one of 20 workers, then deleted
// (its deletionTimestamp, then its removal) and done. Not safe for concurrent use.
type cascader struct {
	left     []gc.NodeState
	inFlight []gc.NodeState
	owner    gc.ObjectRef
	idle     bool
}

// cascadeWorkers is how many dependents are in flight at once (the engine's default).
const cascadeWorkers = 20

func (c *cascader) next() []gc.Event {
	queue := func(op gc.QueueOp, o gc.ObjectRef) gc.Event {
		return gc.Event{Type: gc.QueueChange, Queue: &gc.QueueEvent{Queue: gc.AttemptToDelete, Op: op, Object: o}}
	}
	switch {
	case len(c.inFlight) < cascadeWorkers && len(c.left) > 0:
		d := c.left[0]
		c.left = c.left[1:]
		c.inFlight = append(c.inFlight, d)
		return []gc.Event{queue(gc.QueueAdded, d.ObjectRef), queue(gc.QueueTaken, d.ObjectRef)}
	case len(c.inFlight) > 0:
		d := c.inFlight[0]
		c.inFlight = c.inFlight[1:]
		now := time.Now().UTC()
		deleted := d
		deleted.BeingDeleted, deleted.DeletionTimestamp = true, &now
		events := []gc.Event{{Type: gc.NodeUpdated, Node: &deleted}, {Type: gc.NodeRemoved, Node: &deleted}}
		for _, o := range d.Owners {
			events = append(events, gc.Event{Type: gc.EdgeRemoved, Edge: &gc.Edge{Dependent: d.UID, Owner: o.UID,
				Controller: o.Controller, BlockOwnerDeletion: o.BlockOwnerDeletion}})
		}
		return append(events, queue(gc.QueueDone, d.ObjectRef))
	default: // the cascade is over: the owner comes and goes in graphChanges
		c.idle = !c.idle
		op := gc.QueueAdded
		if !c.idle {
			op = gc.QueueDone
		}
		return []gc.Event{{Type: gc.QueueChange, Queue: &gc.QueueEvent{Queue: gc.GraphChanges, Op: op, Object: c.owner, Change: "update"}}}
	}
}

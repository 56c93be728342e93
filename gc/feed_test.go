package gc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// fixedClock returns t, then t plus one second per call.
func fixedClock(t time.Time) func() time.Time {
	return func() time.Time {
		now := t
		t = t.Add(time.Second)
		return now
	}
}

// publishN publishes n node events named n1, n2, ...
func publishN(f *Feed, n int) {
	for range n {
		i := f.LastSeq() + 1
		f.publish(Event{Type: NodeAdded, Node: &NodeState{ObjectRef: ObjectRef{Name: fmt.Sprintf("n%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))}}})
	}
}

func seqsOf(evs []Event) []uint64 {
	var out []uint64
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func seqRange(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func TestFeedSequenceNumbersStrictlyIncrease(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := newFeed(16, fixedClock(start))
	if f.LastSeq() != 0 {
		t.Fatalf("LastSeq before any event = %d, want 0", f.LastSeq())
	}
	publishN(f, 5)
	evs, err := f.Since(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := seqsOf(evs); !slices.Equal(got, seqRange(1, 5)) {
		t.Errorf("seqs = %v, want 1..5", got)
	}
	for i, e := range evs {
		if want := start.Add(time.Duration(i) * time.Second); !e.Time.Equal(want) {
			t.Errorf("event %d time = %v, want the clock's %v", e.Seq, e.Time, want)
		}
		if e.Node.Name != fmt.Sprintf("n%d", e.Seq) {
			t.Errorf("event %d carries %s", e.Seq, e.Node.Name)
		}
	}
	if f.LastSeq() != 5 {
		t.Errorf("LastSeq = %d, want 5", f.LastSeq())
	}
	// The number a publisher sets is overwritten: only the feed numbers events.
	f.publish(Event{Seq: 1000, Type: NodeAdded, Node: &NodeState{}})
	if evs, _ := f.Since(5, 0); len(evs) != 1 || evs[0].Seq != 6 {
		t.Errorf("after a publish with its own Seq: %v, want seq 6", seqsOf(evs))
	}
}

func TestFeedSinceReturnsWhatFollows(t *testing.T) {
	f := newFeed(16, time.Now)
	publishN(f, 5)
	for _, tc := range []struct {
		seq  uint64
		max  int
		want []uint64
	}{
		{0, 0, seqRange(1, 5)},
		{2, 0, seqRange(3, 5)},
		{2, 2, seqRange(3, 4)},
		{4, 10, seqRange(5, 5)},
		{5, 0, nil},
		{9, 0, nil}, // ahead of the feed: nothing yet
	} {
		evs, err := f.Since(tc.seq, tc.max)
		if err != nil {
			t.Errorf("Since(%d, %d): %v", tc.seq, tc.max, err)
		}
		if got := seqsOf(evs); !slices.Equal(got, tc.want) {
			t.Errorf("Since(%d, %d) = %v, want %v", tc.seq, tc.max, got, tc.want)
		}
	}
}

func TestFeedRingOverflowReturnsErrTooOld(t *testing.T) {
	f := newFeed(4, time.Now)
	publishN(f, 10) // holds 7..10
	for _, seq := range []uint64{0, 1, 5} {
		if evs, err := f.Since(seq, 0); !errors.Is(err, ErrTooOld) || evs != nil {
			t.Errorf("Since(%d) = %v, %v; want ErrTooOld", seq, seqsOf(evs), err)
		}
	}
	evs, err := f.Since(6, 0)
	if err != nil {
		t.Fatalf("Since(6): %v", err)
	}
	if got := seqsOf(evs); !slices.Equal(got, seqRange(7, 10)) {
		t.Errorf("Since(6) = %v, want 7..10", got)
	}
	for _, e := range evs {
		if e.Node.Name != fmt.Sprintf("n%d", e.Seq) {
			t.Errorf("after wrapping, event %d carries %s", e.Seq, e.Node.Name)
		}
	}
	if evs, err := f.Since(8, 1); err != nil || !slices.Equal(seqsOf(evs), []uint64{9}) {
		t.Errorf("Since(8, 1) = %v, %v; want [9]", seqsOf(evs), err)
	}
	// Several wraps later the window still slides.
	publishN(f, 7) // holds 14..17
	if _, err := f.Since(12, 0); !errors.Is(err, ErrTooOld) {
		t.Errorf("Since(12) after more wraps: %v, want ErrTooOld", err)
	}
	if evs, err := f.Since(13, 0); err != nil || !slices.Equal(seqsOf(evs), seqRange(14, 17)) {
		t.Errorf("Since(13) = %v, %v; want 14..17", seqsOf(evs), err)
	}
}

func TestFeedWait(t *testing.T) {
	t.Run("an event already there", func(t *testing.T) {
		f := newFeed(4, time.Now)
		publishN(f, 2)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := f.Wait(ctx, 1); err != nil {
			t.Errorf("Wait(1) with seq 2 published = %v, want nil at once", err)
		}
	})
	t.Run("a new event", func(t *testing.T) {
		f := newFeed(4, time.Now)
		publishN(f, 2)
		done := make(chan error, 2)
		for range 2 { // two waiters, both woken
			go func() { done <- f.Wait(context.Background(), 2) }()
		}
		select {
		case err := <-done:
			t.Fatalf("Wait returned %v before any new event", err)
		case <-time.After(50 * time.Millisecond):
		}
		publishN(f, 1)
		for range 2 {
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Wait = %v, want nil", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Wait did not return after a new event")
			}
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		f := newFeed(4, time.Now)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- f.Wait(ctx, 0) }()
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Wait = %v, want context.Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Wait did not return on cancel")
		}
		// The feed still wakes later waiters.
		done2 := make(chan error, 1)
		go func() { done2 <- f.Wait(context.Background(), 0) }()
		publishN(f, 1)
		select {
		case err := <-done2:
			if err != nil {
				t.Errorf("Wait after a cancelled wait = %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Wait after a cancelled wait did not return")
		}
	})
	t.Run("deadline", func(t *testing.T) {
		f := newFeed(4, time.Now)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		if err := f.Wait(ctx, 0); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Wait = %v, want context.DeadlineExceeded", err)
		}
	})
}

// --- the property: snapshot + feed = state ---

// propWorld is a small cluster whose objects change at random (seeded, deterministic), and
// the events its informers and workers would give the graph builder: objects are created
// with fresh uids (and may be seen late, or never, by the informers), updated, deleted;
// owner references point at existing objects (sometimes with wrong coordinates), at objects
// gone and at uids that never existed; virtual deletes come only for identities a worker
// would find absent.
type propWorld struct {
	rng    *rand.Rand
	slots  []*propSlot
	gone   []metav1.OwnerReference // references to incarnations deleted
	ghosts []metav1.OwnerReference // references to uids that never existed
	exists map[types.UID]objectReference
}

// propSlot is one name; each incarnation gets a new uid.
type propSlot struct {
	kind     int // in propKinds
	ns, name string
	gen      int
	uid      types.UID // the current incarnation; "" when there is none
	obj      *metav1.PartialObjectMetadata
	observed bool // the informer delivered its add
}

var propKinds = []struct {
	apiVersion, kind string
	namespaced       bool
}{
	{"apps/v1", "Deployment", true},
	{"apps/v1", "ReplicaSet", true},
	{"v1", "Pod", true},
	{"v1", "PersistentVolume", false},
}

func newPropWorld(seed uint64, n int) *propWorld {
	w := &propWorld{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), exists: map[types.UID]objectReference{}}
	for i := range n {
		s := &propSlot{kind: i % len(propKinds), name: fmt.Sprintf("obj-%d", i)}
		if propKinds[s.kind].namespaced {
			s.ns = []string{"a", "b"}[(i/len(propKinds))%2]
		}
		w.slots = append(w.slots, s)
	}
	for i := range 5 {
		k := propKinds[i%len(propKinds)]
		w.ghosts = append(w.ghosts, metav1.OwnerReference{APIVersion: k.apiVersion, Kind: k.kind, Name: fmt.Sprintf("ghost-%d", i), UID: types.UID(fmt.Sprintf("uid-ghost-%d", i))})
	}
	return w
}

func (s *propSlot) ref() objectReference {
	k := propKinds[s.kind]
	return refIdentity(k.apiVersion, k.kind, s.ns, s.name, s.uid)
}

func (w *propWorld) pick(n int) int { return w.rng.IntN(n) }

// ownerRef picks an owner for self: mostly an existing object, else one gone or a ghost;
// sometimes with wrong coordinates.
func (w *propWorld) ownerRef(self *propSlot) (metav1.OwnerReference, bool) {
	var r metav1.OwnerReference
	switch x := w.pick(10); {
	case x < 7:
		s := w.slots[w.pick(len(w.slots))]
		if s == self || s.uid == "" {
			return r, false
		}
		r = s.ref().OwnerReference
	case x < 9:
		if len(w.gone) == 0 {
			return r, false
		}
		r = w.gone[w.pick(len(w.gone))]
	default:
		r = w.ghosts[w.pick(len(w.ghosts))]
	}
	switch w.pick(16) {
	case 0:
		r.Kind = propKinds[w.pick(len(propKinds))].kind
	case 1:
		r.Name += "-alias"
	case 2:
		r.APIVersion = "apps/v1beta2"
	}
	switch w.pick(3) {
	case 0:
		r.BlockOwnerDeletion = ptr.To(true)
	case 1:
		r.BlockOwnerDeletion = ptr.To(false)
	}
	return r, true
}

func (w *propWorld) owners(self *propSlot) []metav1.OwnerReference {
	var refs []metav1.OwnerReference
	hasController := false
	for range w.pick(4) {
		r, ok := w.ownerRef(self)
		if !ok || slices.ContainsFunc(refs, func(o metav1.OwnerReference) bool { return o.UID == r.UID }) {
			continue
		}
		if !hasController && w.pick(3) == 0 {
			r.Controller = ptr.To(true)
			hasController = true
		}
		refs = append(refs, r)
	}
	return refs
}

func (w *propWorld) finalizers() []string {
	var out []string
	for _, f := range []string{metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents, "example.com/hold"} {
		if w.pick(4) == 0 {
			out = append(out, f)
		}
	}
	return out
}

// state is the slot's next state: new owners or the same, new finalizers, and a deletion
// that once started never stops.
func (w *propWorld) state(s *propSlot, prev *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
	id := s.ref()
	o := testObject(id.APIVersion, id.Kind, id.Namespace, id.Name, id.UID)
	if prev != nil && w.pick(2) == 0 {
		o.OwnerReferences = prev.OwnerReferences
	} else {
		o.OwnerReferences = w.owners(s)
	}
	o.Finalizers = w.finalizers()
	switch {
	case prev != nil && prev.DeletionTimestamp != nil:
		o.DeletionTimestamp = prev.DeletionTimestamp
	case w.pick(8) == 0:
		ts := metav1.NewTime(testDeletionTime.Add(time.Duration(w.pick(1000)) * time.Second))
		o.DeletionTimestamp = &ts
	}
	return o
}

func (w *propWorld) kill(s *propSlot) {
	w.gone = append(w.gone, s.ref().OwnerReference)
	delete(w.exists, s.uid)
	s.uid, s.obj, s.observed = "", nil, false
}

// found reports whether a worker looking ref up would find it.
func (w *propWorld) found(ref objectReference) bool {
	real, ok := w.exists[ref.UID]
	if !ok || ownerCoordinates(ref.OwnerReference) != real.OwnerReference {
		return false
	}
	return real.Namespace == "" || real.Namespace == ref.Namespace
}

// virtualDelete returns a virtual delete a worker could send for a node of g, if any.
func (w *propWorld) virtualDelete(g *graph) *event {
	g.mu.RLock()
	defer g.mu.RUnlock()
	uids := make([]types.UID, 0, len(g.uidToNode))
	for uid := range g.uidToNode {
		uids = append(uids, uid)
	}
	if len(uids) == 0 {
		return nil
	}
	slices.Sort(uids)
	n := g.uidToNode[uids[w.pick(len(uids))]]
	ref := n.identity
	if deps := n.dependentList(); len(deps) > 0 && w.pick(2) == 0 {
		d := deps[w.pick(len(deps))]
		for _, o := range d.owners {
			if o.UID == ref.UID {
				ref = objectReference{OwnerReference: ownerCoordinates(o), Namespace: d.identity.Namespace}
				break
			}
		}
	}
	namespacedKind := slices.ContainsFunc(propKinds, func(k struct {
		apiVersion, kind string
		namespaced       bool
	}) bool {
		return k.kind == ref.Kind && k.namespaced
	})
	switch {
	case ref.APIVersion == "apps/v1beta2":
		return nil // not served: the worker retries, never concludes
	case namespacedKind && ref.Namespace == "":
		return nil // a namespaced kind without a namespace is never looked up
	case w.found(ref):
		return nil
	}
	if _, exists := w.exists[ref.UID]; exists && n.virtual {
		// The object exists under other coordinates and will be observed: a worker that
		// found these coordinates absent removes the node only if every dependent used
		// them, which the graph cannot mend when the object shows up (nor can upstream's).
		return nil
	}
	return evVirtualDelete(ref)
}

// next returns the next event the graph builder gets.
func (w *propWorld) next(g *graph) *event {
	for {
		if w.pick(8) == 0 {
			if ev := w.virtualDelete(g); ev != nil {
				return ev
			}
			continue
		}
		s := w.slots[w.pick(len(w.slots))]
		switch {
		case s.uid == "": // create, seen now or later
			s.gen++
			s.uid = types.UID(fmt.Sprintf("uid-%s-%d", s.name, s.gen))
			w.exists[s.uid] = s.ref()
			s.obj = w.state(s, nil)
			if w.pick(3) > 0 {
				s.observed = true
				return evAdd(s.obj)
			}
		case !s.observed && w.pick(4) == 0: // created and deleted unseen
			w.kill(s)
		case !s.observed:
			s.observed = true
			return evAdd(s.obj)
		case w.pick(4) == 0:
			last := s.obj
			w.kill(s)
			return evDelete(last)
		default:
			prev := s.obj
			s.obj = w.state(s, prev)
			return evUpdate(prev, s.obj)
		}
	}
}

// TestFeedReplayMatchesSnapshot: a snapshot taken at any point, plus the feed's node
// events after its sequence number, gives exactly the state of a later snapshot.
func TestFeedReplayMatchesSnapshot(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			h := newEngineHarness(t, Options{FeedSize: 1 << 17})
			w := newPropWorld(seed, 24)
			const steps = 1500
			mid := 200 + w.pick(steps-400)
			var first Snapshot
			kinds := map[string]int{}
			removed := map[types.UID]bool{} // uids removed from the graph so far
			for i := range steps {
				if i == mid {
					first = h.gc.Snapshot()
				}
				ev := w.next(h.gc.graph)
				kind := ev.eventType.String()
				if ev.virtual {
					kind = "virtualDelete"
				}
				kinds[kind]++
				seq := h.gc.feed.LastSeq()
				h.gc.graph.mu.Lock()
				h.gc.builder.processGraphChanges(ev)
				h.gc.graph.mu.Unlock()
				stepEvents, err := h.gc.feed.Since(seq, 0)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range stepEvents {
					if e.Type == NodeRemoved {
						removed[e.Node.UID] = true
					}
				}
				verifyGraphInvariantsExcept(t, h.gc.graph, removed)
				if t.Failed() {
					t.Fatalf("step %d (%s of %s): the graph is inconsistent", i, kind, ev.identity())
				}
			}
			last := h.gc.Snapshot()
			for _, k := range []string{"add", "update", "delete", "virtualDelete"} {
				if kinds[k] == 0 {
					t.Fatalf("the generator produced no %s event: %v", k, kinds)
				}
			}

			// Up to the final snapshot only: a backoff timer may publish its queue event later.
			evs, err := h.gc.feed.Since(first.Seq, int(last.Seq-first.Seq))
			if err != nil {
				t.Fatalf("Since(%d): %v", first.Seq, err)
			}
			if got, want := seqsOf(evs), seqRange(first.Seq+1, last.Seq); !slices.Equal(got, want) {
				t.Fatalf("feed after the snapshot: %d events, seqs not contiguous up to %d", len(got), last.Seq)
			}
			state := map[types.UID]NodeState{}
			for _, n := range first.Nodes {
				state[n.UID] = n
			}
			applyNodeEvents(state, evs)
			replayed := make([]NodeState, 0, len(state))
			for _, n := range state {
				replayed = append(replayed, n)
			}
			slices.SortFunc(replayed, func(a, b NodeState) int {
				switch {
				case a.UID < b.UID:
					return -1
				case a.UID > b.UID:
					return 1
				}
				return 0
			})
			if len(last.Nodes) == 0 || len(first.Nodes) == 0 {
				t.Fatalf("degenerate run: %d nodes at the snapshot, %d at the end", len(first.Nodes), len(last.Nodes))
			}
			if !reflect.DeepEqual(replayed, last.Nodes) {
				byUID := map[types.UID]NodeState{}
				for _, n := range last.Nodes {
					byUID[n.UID] = n
				}
				for _, n := range replayed {
					if want, ok := byUID[n.UID]; !ok {
						t.Errorf("replayed node %s is not in the final snapshot", n.UID)
					} else if !reflect.DeepEqual(n, want) {
						t.Errorf("node %s replayed as\n%+v\nbut the final snapshot has\n%+v", n.UID, n, want)
					}
					delete(byUID, n.UID)
				}
				for uid := range byUID {
					t.Errorf("node %s of the final snapshot is missing from the replay", uid)
				}
			}
			t.Logf("%d events (%v), snapshot at step %d (seq %d, %d nodes), final seq %d with %d nodes",
				steps, kinds, mid, first.Seq, len(first.Nodes), last.Seq, len(last.Nodes))
		})
	}
}

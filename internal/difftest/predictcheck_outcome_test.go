package difftest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

// objState is what the check compares of one object: whether it is being deleted, its
// finalizers (sorted) and its ownerReferences (by owner uid).
type objState struct {
	deleting   bool
	finalizers []string
	refs       []refState
	// invalid: a cluster-scoped object naming a namespaced owner, which the collector
	// leaves alone (not compared: the engine's view does not say it).
	invalid bool
}

type refState struct {
	uid               types.UID
	block, controller bool
}

func refsOf(refs []metav1.OwnerReference) []refState {
	out := make([]refState, 0, len(refs))
	for _, r := range refs {
		out = append(out, refState{uid: r.UID, block: deref(r.BlockOwnerDeletion), controller: deref(r.Controller)})
	}
	slices.SortFunc(out, func(a, b refState) int { return cmp.Compare(a.uid, b.uid) })
	return out
}

func (o objState) equal(b objState) bool {
	return o.deleting == b.deleting && slices.Equal(o.finalizers, b.finalizers) && slices.Equal(o.refs, b.refs)
}

// refersTo reports whether o names uid as an owner (blocking only, if blocking).
func (o objState) refersTo(uid types.UID, blocking bool) bool {
	return slices.ContainsFunc(o.refs, func(r refState) bool { return r.uid == uid && (r.block || !blocking) })
}

func (c *checker) render(o objState) string {
	var refs []string
	for _, r := range o.refs {
		s := c.name(r.uid)
		if r.controller {
			s += "+c"
		}
		if r.block {
			s += "+b"
		}
		refs = append(refs, s)
	}
	return fmt.Sprintf("deleting=%v finalizers=%v owners=%v", o.deleting, o.finalizers, refs)
}

// kinds are the resources the scenario's objects are of.
func (c *checker) kinds() []schema.GroupVersionResource {
	out := []schema.GroupVersionResource{configMaps, clusterRoles}
	if c.p.s.usesCRD() {
		out = append(out, c.p.widgets("v1"))
	}
	return out
}

func (c *checker) selector() metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: scenarioLabel + "=" + c.p.ns}
}

// objects lists the scenario's objects as the apiserver holds them, by uid.
func (c *checker) objects(ctx context.Context) (map[types.UID]objState, error) {
	out := map[types.UID]objState{}
	for _, gvr := range c.kinds() {
		list, err := c.p.side.dyn.Resource(gvr).List(ctx, c.selector())
		if err != nil {
			return nil, err
		}
		for _, u := range list.Items {
			invalid := u.GetNamespace() == "" && slices.ContainsFunc(u.GetOwnerReferences(), func(r metav1.OwnerReference) bool {
				return r.Kind != kindClusterRole // every other kind of the scenario is namespaced
			})
			out[u.GetUID()] = objState{deleting: u.GetDeletionTimestamp() != nil, invalid: invalid,
				finalizers: slices.Sorted(slices.Values(u.GetFinalizers())), refs: refsOf(u.GetOwnerReferences())}
		}
	}
	return out, nil
}

// engineView is the scenario's objects as the engine's graph holds them (observed nodes).
func (c *checker) engineView() map[types.UID]objState {
	out := map[types.UID]objState{}
	for _, uid := range c.p.uids {
		n, ok := c.engine.Node(uid)
		if !ok || !n.Observed {
			continue
		}
		var refs []metav1.OwnerReference
		for _, o := range n.Owners {
			refs = append(refs, metav1.OwnerReference{UID: o.UID, BlockOwnerDeletion: &o.BlockOwnerDeletion, Controller: &o.Controller})
		}
		out[uid] = objState{deleting: n.BeingDeleted, finalizers: slices.Sorted(slices.Values(n.Finalizers)), refs: refsOf(refs)}
	}
	return out
}

// busy names the engine's queue items about the scenario's objects (or its ghost owner)
// that are queued, in a worker's hands or waiting for a retry.
func (c *checker) busy() []string {
	var out []string
	for _, q := range c.engine.SnapshotWithoutNodes().Queues {
		for _, it := range q.Items {
			if _, mine := c.index[it.Object.UID]; !mine && it.Object.UID != c.ghost {
				continue
			}
			if it.Queued || it.InFlight || it.BackoffUntil != nil {
				out = append(out, fmt.Sprintf("%s in %s", c.name(it.Object.UID), q.Name))
			}
		}
	}
	return out
}

// Settling: the engine's graph holds the scenario's objects as the apiserver does (every
// event seen), and no queue holds work about them; the same on settleChecks checks in a
// row, settlePace apart. Nothing else acts on the cluster (no controller, no other test),
// so once the engine has nothing left to do the cluster stays as it is.
const (
	settlePace   = 50 * time.Millisecond
	settleChecks = 3
	settleLimit  = 3 * time.Minute
)

func (c *checker) settle(ctx context.Context) error {
	var last, why string
	same := 0
	var listErr error
	quiet := func() bool {
		objs, err := c.objects(ctx)
		if err != nil {
			listErr = err
			return true
		}
		seen := c.engineView()
		why = ""
		for uid, o := range objs {
			if e, ok := seen[uid]; !ok || !e.equal(o) {
				why = fmt.Sprintf("the engine has not seen %s as %s", c.name(uid), c.render(o))
			}
		}
		for uid := range seen {
			if _, ok := objs[uid]; !ok {
				why = fmt.Sprintf("the engine has not seen %s go", c.name(uid))
			}
		}
		if b := c.busy(); len(b) > 0 {
			why = "queued: " + strings.Join(b, ", ")
		}
		if why != "" {
			same = 0
			return false
		}
		var lines []string
		for uid, o := range objs {
			lines = append(lines, c.name(uid)+" "+c.render(o))
		}
		slices.Sort(lines)
		state := strings.Join(lines, "\n")
		if state != last {
			last, same = state, 0
		}
		same++
		return same >= settleChecks
	}
	if err := testkit.PollEvery(ctx, settlePace, settleLimit, quiet); err != nil {
		return fmt.Errorf("never settled (%s): %w", why, err)
	}
	return listErr
}

// removals records when each of the scenario's objects left the apiserver: the
// resourceVersion of its DELETED event, which is the etcd revision of the removal (every
// resource here is kept in the one etcd, so revisions order removals across kinds).
type removals struct {
	c      *checker
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	at     map[types.UID]uint64
	err    error
}

// watchRemovals starts watching the scenario's objects of every kind, from now.
func (c *checker) watchRemovals(ctx context.Context) (*removals, error) {
	ctx, cancel := context.WithCancel(ctx)
	w := &removals{c: c, cancel: cancel, at: map[types.UID]uint64{}}
	for _, gvr := range c.kinds() {
		res := c.p.side.dyn.Resource(gvr)
		list, err := res.List(ctx, c.selector())
		var wi watch.Interface
		if err == nil {
			opts := c.selector()
			opts.ResourceVersion = list.GetResourceVersion()
			wi, err = res.Watch(ctx, opts)
		}
		if err != nil {
			w.stop()
			return nil, fmt.Errorf("watch %s: %w", gvr.Resource, err)
		}
		w.wg.Go(func() {
			defer wi.Stop()
			for ev := range wi.ResultChan() {
				switch ev.Type {
				case watch.Deleted:
					u, ok := ev.Object.(*unstructured.Unstructured)
					rv, err := strconv.ParseUint(u.GetResourceVersion(), 10, 64)
					if !ok || err != nil {
						w.fail(fmt.Errorf("a DELETED event of %s without a resourceVersion: %v", gvr.Resource, ev.Object))
						continue
					}
					w.mu.Lock()
					w.at[u.GetUID()] = rv
					w.mu.Unlock()
				case watch.Error:
					w.fail(fmt.Errorf("watch %s: %w", gvr.Resource, apierrors.FromObject(ev.Object)))
				}
			}
			if ctx.Err() == nil {
				w.fail(fmt.Errorf("the watch of %s ended", gvr.Resource))
			}
		})
	}
	return w, nil
}

func (w *removals) fail(err error) {
	w.mu.Lock()
	w.err = cmp.Or(w.err, err)
	w.mu.Unlock()
}

func (w *removals) stop() {
	w.cancel()
	w.wg.Wait()
}

// of waits until the watch has seen every object of before that after lacks go, and
// returns when each went.
func (w *removals) of(ctx context.Context, before, after map[types.UID]objState) (map[types.UID]uint64, error) {
	var gone []types.UID
	for uid := range before {
		if _, ok := after[uid]; !ok {
			gone = append(gone, uid)
		}
	}
	var out map[types.UID]uint64
	seen := func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.err != nil {
			return true
		}
		for _, uid := range gone {
			if _, ok := w.at[uid]; !ok {
				return false
			}
		}
		out = w.at
		return true
	}
	if err := testkit.Poll(ctx, time.Minute, seen); err != nil {
		return nil, errors.New("the watch never saw every removal")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return out, w.err
}

// outcome is what a predicted delete did: the scenario's objects before it, once the
// cluster settled after it (mid: the held still held), and at the end (after the
// finalizers the prediction names were removed), and when each object went.
type outcome struct {
	targets            []types.UID
	policy             metav1.DeletionPropagation
	before, mid, after map[types.UID]objState
	removed            map[types.UID]uint64
}

// judge compares a prediction with what the cluster did, and says each difference.
//
// What a Prediction claims, and how it is checked:
//   - Target, Targets and Policy are the delete's; every target is in Deleted; no object is
//     in two of Deleted, Orphaned and Kept.
//   - Deleted: each object is gone once the finalizers the prediction names are removed,
//     and no other object went. Each one's Finalizers are its finalizers other than the
//     collector's, and foregroundDeletion when its foreground deletion never finishes by
//     itself; Waiting is those of Deleted that have some.
//   - Waiting: held, they are still there once the cluster settles; an object of Deleted
//     still there then is held or waits for one that is (an owner of it that goes and is
//     still there, or a blocking dependent that goes and is still there).
//   - TargetWaitsFor (Foreground): held objects the targets wait for; a target that is
//     not held itself is still there once the cluster settles if and only if it waits for
//     one (for a set: some target is, if and only if the list is not empty).
//   - Orphaned: still there, as they were, without their references to the targets.
//   - Kept: still there, as they were, without their references to the objects deleted
//     (but for those the collector leaves alone, which keep them all: one being deleted,
//     one cluster-scoped naming a namespaced owner).
//   - Steps (Foreground, when Order is said): an object goes after each of its blocking
//     dependents that go, and its step is greater than theirs.
//   - Everything else is left as it was. Nothing is recreated (Prediction has no part for
//     what a controller would recreate: the cluster runs none, so no new object appears).
func (c *checker) judge(p gc.Prediction, o outcome) []string {
	var bad []string
	badf := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	uidsOf := func(l []gc.PredictedObject) map[types.UID]gc.PredictedObject {
		m := map[types.UID]gc.PredictedObject{}
		for _, x := range l {
			m[x.Object.UID] = x
		}
		return m
	}
	deleted, orphaned, kept := uidsOf(p.Deleted), uidsOf(p.Orphaned), uidsOf(p.Kept)
	waiting, waitsFor := uidsOf(p.Waiting), uidsOf(p.TargetWaitsFor)

	// The prediction's own statements.
	if p.Target.UID != o.targets[0] {
		badf("Target is %s, the delete's first target %s", c.name(p.Target.UID), c.name(o.targets[0]))
	}
	var targets []types.UID
	for _, t := range p.Targets {
		targets = append(targets, t.UID)
	}
	if want := o.targets; len(want) == 1 && targets != nil || len(want) > 1 && !slices.Equal(targets, want) {
		badf("Targets %v, want %v", c.names(targets), c.names(want))
	}
	if p.Policy != string(o.policy) {
		badf("Policy %q, want %q", p.Policy, o.policy)
	}
	for _, t := range o.targets {
		if _, ok := deleted[t]; !ok {
			badf("target %s is not in Deleted", c.name(t))
		}
	}
	for uid := range deleted {
		_, inO := orphaned[uid]
		_, inK := kept[uid]
		if inO || inK {
			badf("%s is in Deleted and in Orphaned or Kept", c.name(uid))
		}
	}
	for uid := range orphaned {
		if _, ok := kept[uid]; ok {
			badf("%s is in Orphaned and Kept", c.name(uid))
		}
	}
	for uid, d := range deleted {
		b, ok := o.before[uid]
		if !ok {
			badf("%s is in Deleted but was not there", c.name(uid))
			continue
		}
		held := gc.HeldBy(b.finalizers)
		named := slices.DeleteFunc(slices.Sorted(slices.Values(d.Finalizers)), func(f string) bool { return f == metav1.FinalizerDeleteDependents })
		if !slices.Equal(named, held) {
			badf("%s is held by %v, predicted %v", c.name(uid), held, d.Finalizers)
		}
		if _, w := waiting[uid]; w != (len(d.Finalizers) > 0) {
			badf("%s in Waiting: %v, predicted held by %v", c.name(uid), w, d.Finalizers)
		}
	}
	for uid := range waitsFor {
		if _, ok := waiting[uid]; !ok {
			badf("%s is in TargetWaitsFor, not in Waiting", c.name(uid))
		}
	}

	// Once settled, the held still held.
	for uid := range deleted {
		m, there := o.mid[uid]
		if !there {
			continue
		}
		if _, w := waiting[uid]; w {
			continue
		}
		explained := false
		for other := range deleted {
			om, otherThere := o.mid[other]
			if other == uid || !otherThere {
				continue
			}
			if m.refersTo(other, false) || om.refersTo(uid, true) || o.before[uid].refersTo(other, false) || o.before[other].refersTo(uid, true) {
				explained = true
				break
			}
		}
		if !explained {
			badf("%s stayed (%s), held by nothing the prediction names", c.name(uid), c.render(m))
		}
	}
	for uid := range waiting {
		if _, there := o.mid[uid]; !there {
			badf("%s, held, went before its finalizers were removed", c.name(uid))
		}
	}
	for uid := range waitsFor {
		if m, there := o.mid[uid]; there && !m.deleting {
			badf("%s, which a target waits for, is not being deleted", c.name(uid))
		}
	}
	var targetsThere []string
	for _, t := range o.targets {
		_, there := o.mid[t]
		_, held := waiting[t]
		switch {
		case there:
			targetsThere = append(targetsThere, c.name(t))
		case held:
			badf("target %s, held, went", c.name(t))
		}
		if there && !held && (o.policy != metav1.DeletePropagationForeground || len(waitsFor) == 0) {
			badf("target %s stayed (%s), waiting for nothing the prediction names", c.name(t), c.render(o.mid[t]))
		}
	}
	if o.policy == metav1.DeletePropagationForeground && len(waitsFor) > 0 && len(targetsThere) == 0 {
		badf("every target went, though TargetWaitsFor names %v", c.names(keysOf(waitsFor)))
	}

	// At the end.
	for uid := range deleted {
		if a, there := o.after[uid]; there {
			badf("%s, predicted deleted, is still there (%s)", c.name(uid), c.render(a))
		}
	}
	for uid, b := range o.before {
		if _, ok := deleted[uid]; ok {
			continue
		}
		a, there := o.after[uid]
		_, isOrphan := orphaned[uid]
		_, isKept := kept[uid]
		switch {
		case !there:
			predicted := "untouched"
			if isOrphan {
				predicted = "orphaned"
			} else if isKept {
				predicted = "kept"
			}
			badf("%s went, predicted %s", c.name(uid), predicted)
		case a.deleting != b.deleting || !slices.Equal(a.finalizers, b.finalizers):
			badf("%s changed: %s, before %s", c.name(uid), c.render(a), c.render(b))
		case isOrphan:
			for _, t := range o.targets {
				if a.refersTo(t, false) {
					badf("%s, orphaned, still names %s", c.name(uid), c.name(t))
				}
			}
		case isKept && (b.invalid || b.deleting):
			if !slices.Equal(a.refs, b.refs) {
				badf("%s, kept, and left alone by the collector, changed: %s, before %s", c.name(uid), c.render(a), c.render(b))
			}
		case isKept:
			for d := range deleted {
				if a.refersTo(d, false) {
					badf("%s, kept, still names %s, deleted", c.name(uid), c.name(d))
				}
			}
		case !slices.Equal(a.refs, b.refs):
			badf("%s, untouched, changed: %s, before %s", c.name(uid), c.render(a), c.render(b))
		}
	}
	for uid := range o.after {
		if _, ok := o.before[uid]; !ok {
			badf("%s appeared (%s)", c.name(uid), c.render(o.after[uid]))
		}
	}
	for uid := range orphaned {
		if _, ok := o.before[uid]; !ok {
			badf("%s is in Orphaned but was not there", c.name(uid))
		}
	}
	for uid := range kept {
		if _, ok := o.before[uid]; !ok {
			badf("%s is in Kept but was not there", c.name(uid))
		}
	}

	// The order.
	if p.Order != "" {
		for x, px := range deleted {
			for d, pd := range deleted {
				if d == x || !o.before[d].refersTo(x, true) {
					continue
				}
				if pd.Step >= px.Step {
					badf("%s (step %d) blocks %s (step %d): its step should be lower", c.name(d), pd.Step, c.name(x), px.Step)
				}
				rd, okD := o.removed[d]
				rx, okX := o.removed[x]
				if okD && okX && rd > rx {
					badf("%s (step %d) went after %s (step %d), which it blocks", c.name(d), pd.Step, c.name(x), px.Step)
				}
			}
		}
	}
	slices.Sort(bad)
	return bad
}

func keysOf[V any](m map[types.UID]V) []types.UID {
	out := make([]types.UID, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

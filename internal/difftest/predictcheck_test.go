package difftest

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

// The prediction check (make predictcheck N=…; make test runs defaultPredictSeeds):
// gcscope's engine alone, on a control plane of its own, is asked what a delete will do,
// the delete is made, and what the apiserver then holds must be what was predicted. Each
// seed builds the objects of the differential test's scenario (generate), writes their
// other references (link) and plays a random prefix of its steps (deletes, holds and
// releases of the hold finalizer, references changed; not the CRD's version switches or
// deletion), settling after each. Then one or two rounds: a random delete (one object
// through PredictDelete, or two to four through PredictDeleteSet; Background, Foreground or
// Orphan) is predicted, made, and its outcome compared (see judge). Each seed also checks
// one delete of storage (predictcheck_storage_test.go).
const defaultPredictSeeds = 10

var predictPolicies = []metav1.DeletionPropagation{
	metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan,
}

// The prediction check's cluster and engine, filled by its shared control plane's Setup.
var (
	predictSide   *side
	predictEngine *gc.GarbageCollector
)

// predictEnv returns the prediction check's side and the engine that runs on it (the
// engine of no other test: its graph and queues are the check's alone).
func predictEnv(t *testing.T) (*side, *gc.GarbageCollector) {
	t.Helper()
	testkit.Shared(t, testkit.Options{Name: "predict", Setup: func(_ context.Context, k *testkit.Env) error {
		s := newSide("predict", k)
		engine, err := runOurs(k.Context(), s.config)
		if err != nil {
			return err
		}
		predictSide, predictEngine = s, engine
		return nil
	}})
	return predictSide, predictEngine
}

// predictSeeds: GCSCOPE_PREDICTCHECK_SEED=123 replays one seed (or a list or range, as
// GCSCOPE_DIFFTEST_SEEDS takes them); GCSCOPE_PREDICTCHECK_SEEDS=N runs seeds 1..N (or a
// list or range); otherwise 1..defaultPredictSeeds.
func predictSeeds(t *testing.T) []int64 {
	v := os.Getenv("GCSCOPE_PREDICTCHECK_SEEDS")
	if one := os.Getenv("GCSCOPE_PREDICTCHECK_SEED"); one != "" {
		v = one
		if _, err := strconv.Atoi(one); err == nil {
			v = one + "-" + one
		}
	}
	if v == "" {
		v = strconv.Itoa(defaultPredictSeeds)
	}
	t.Setenv("GCSCOPE_DIFFTEST_SEEDS", v)
	return seeds(t)
}

func replayCommand(seed int64) string {
	return fmt.Sprintf("GCSCOPE_PREDICTCHECK_SEED=%d go test -count=1 -run '^TestPredictionsComeTrue$' -v ./internal/difftest/", seed)
}

// TestPredictionsComeTrue predicts deletes on the engine's graph and makes them on the
// cluster: every prediction must come true. It prints one line,
// "predictions: N seeds, D deletes, M mismatched" (D: the deletes predicted and made, one
// object or a set each; M: those whose outcome differed), and each mismatch with its seed
// and the command that replays it.
func TestPredictionsComeTrue(t *testing.T) {
	sd, engine := predictEnv(t)
	storage, storageEngine, x := storageEnv(t)
	ss := predictSeeds(t)
	start := time.Now()
	var deletes, mismatched atomic.Int64
	var mu sync.Mutex
	var reports []string
	kinds := map[string]int{}
	record := func(seed int64, scenario fmt.Stringer, res predictResult, err error) {
		deletes.Add(int64(res.deletes))
		mismatched.Add(int64(len(res.mismatches)))
		mu.Lock()
		defer mu.Unlock()
		for k, v := range res.kinds {
			kinds[k] += v
		}
		if err != nil {
			reports = append(reports, fmt.Sprintf("seed %d: %v\n  scenario %s\n  replay: %s", seed, err, scenario, replayCommand(seed)))
		}
		for _, m := range res.mismatches {
			reports = append(reports, fmt.Sprintf("seed %d: %s\n  scenario %s\n  replay: %s", seed, m, scenario, replayCommand(seed)))
		}
	}
	forEach(ss, func(seed int64) {
		res, err := checkPredictions(context.Background(), sd, engine, seed)
		record(seed, generate(seed), res, err)
		res, err = checkStorage(context.Background(), storage, storageEngine, x, seed)
		record(seed, generateStorage(seed), res, err)
	})
	fmt.Printf("predictions: %d seeds, %d deletes, %d mismatched\n", len(ss), deletes.Load(), mismatched.Load())
	var counted []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		counted = append(counted, fmt.Sprintf("%s %d", k, kinds[k]))
	}
	t.Logf("%d seeds in %v; deletes: %s", len(ss), time.Since(start).Round(time.Second), strings.Join(counted, ", "))
	slices.Sort(reports)
	for _, r := range reports {
		t.Error(r)
	}
}

// predictResult is what one seed checked: the deletes predicted and made, and a line for
// each whose outcome was not the prediction.
type predictResult struct {
	deletes    int
	mismatches []string
	// kinds counts the deletes by what their prediction held (policy, a set, steps, held
	// objects, orphaned, kept), for the log: how much each claim was put to the test.
	kinds map[string]int
}

// checker is one seed's scenario on the prediction check's cluster.
type checker struct {
	p      *play
	engine *gc.GarbageCollector
	index  map[types.UID]int // object uid → index in the scenario
	ghost  types.UID         // the uid of the owner that never existed
}

// checkPredictions builds seed's cluster and checks one or two predicted deletes on it.
func checkPredictions(ctx context.Context, sd *side, engine *gc.GarbageCollector, seed int64) (out predictResult, err error) {
	s := generate(seed)
	// The check's own choices come from their own source: generate's stays the difftest's.
	r := rand.New(rand.NewPCG(uint64(seed), 0x70726564696374)) // "predict"
	ns := fmt.Sprintf("pc-%d-%d-%04x", seed, nsCounter.Add(1), rand.IntN(1<<16))
	c := &checker{p: newPlay(sd, s, ns), engine: engine, index: map[types.UID]int{},
		ghost: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", seed%1e12))}
	defer cleanup(c.p)
	if err := c.create(ctx); err != nil {
		return out, fmt.Errorf("creating: %w", err)
	}
	if err := c.settle(ctx); err != nil {
		return out, fmt.Errorf("after creation: %w", err)
	}
	for i, st := range c.prelude(r) {
		if err := c.p.apply(ctx, st); err != nil {
			return out, fmt.Errorf("step %d (%s): %w", i, st, err)
		}
		if err := c.settle(ctx); err != nil {
			return out, fmt.Errorf("after step %d (%s): %w", i, st, err)
		}
	}
	for round := range 1 + r.IntN(2) {
		what, mismatches, err := c.round(ctx, r, &out)
		if what == "" && err == nil {
			break // nothing left to delete
		}
		out.deletes++
		if err != nil {
			return out, fmt.Errorf("round %d (%s): %w", round, what, err)
		}
		if len(mismatches) > 0 {
			out.mismatches = append(out.mismatches, fmt.Sprintf("round %d, %s:\n    %s", round, what, strings.Join(mismatches, "\n    ")))
		}
	}
	return out, nil
}

// prelude is the scenario's steps up to a random point: the links, then those of its
// steps that change objects (the CRD's version switches and deletion, which change what
// is served, and the final release of every hold are left out).
func (c *checker) prelude(r *rand.Rand) []Step {
	s := c.p.s
	nLink := len(s.link())
	var rest []Step
	for _, st := range s.Steps[nLink:] {
		switch st.Op {
		case opDelete, opRelease, opHold, opSetRefs:
			rest = append(rest, st)
		}
	}
	return append(slices.Clone(s.Steps[:nLink]), rest[:r.IntN(len(rest)+1)]...)
}

// create makes what play.create makes, but waits for the engine to monitor the Widgets
// (a condition) rather than for two discovery periods.
func (c *checker) create(ctx context.Context) error {
	p := c.p
	if err := p.createNamespaces(ctx); err != nil {
		return err
	}
	if p.s.usesCRD() {
		if err := c.createCRD(ctx); err != nil {
			return err
		}
	}
	for i, o := range p.s.Objects {
		if err := c.createObject(ctx, i, o); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) createObject(ctx context.Context, i int, o Object) error {
	p := c.p
	created, err := p.resource(i).Create(ctx, p.object(i, o), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create o%d: %w", i, err)
	}
	p.uids[i] = created.GetUID()
	c.index[created.GetUID()] = i
	return nil
}

// createCRD creates the Widget CRD and waits until the apiserver serves it and the engine
// monitors it, synced.
func (c *checker) createCRD(ctx context.Context) error {
	p := c.p
	if _, err := p.side.ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, p.crd(), metav1.CreateOptions{}); err != nil {
		return err
	}
	served := func() bool {
		_, err := p.side.dyn.Resource(p.widgets("v1")).Namespace(p.ns).List(ctx, metav1.ListOptions{})
		return err == nil
	}
	if err := testkit.Poll(ctx, time.Minute, served); err != nil {
		return fmt.Errorf("widgets never served: %w", err)
	}
	name := p.group() + "/v1/widgets"
	monitored := func() bool {
		st := c.engine.SyncState()
		if slices.Contains(st.Resources, name) && !slices.Contains(st.Unsynced, name) {
			return true
		}
		c.engine.RefreshDiscovery()
		return false
	}
	if err := testkit.Poll(ctx, time.Minute, monitored); err != nil {
		return fmt.Errorf("the engine never monitored %s: %w", name, err)
	}
	return nil
}

// round predicts a random delete, makes it and compares. what says what was deleted ("" if
// nothing is left); mismatches, how the outcome differed from the prediction.
func (c *checker) round(ctx context.Context, r *rand.Rand, res *predictResult) (what string, mismatches []string, err error) {
	before, err := c.objects(ctx)
	if err != nil {
		return "", nil, err
	}
	var present []int
	for i, uid := range c.p.uids {
		if _, ok := before[uid]; ok {
			present = append(present, i)
		}
	}
	if len(present) == 0 {
		return "", nil, nil
	}
	n := 1
	if len(present) > 1 && r.IntN(3) == 0 {
		n = 2 + r.IntN(min(3, len(present)-1))
	}
	var targets []types.UID
	var labels []string
	for _, k := range r.Perm(len(present))[:n] {
		i := present[k]
		targets = append(targets, c.p.uids[i])
		labels = append(labels, fmt.Sprintf("o%d", i))
	}
	policy := predictPolicies[r.IntN(len(predictPolicies))]
	what = fmt.Sprintf("delete %s %s", strings.Join(labels, "+"), policy)

	var pred gc.Prediction
	if n == 1 {
		var ok bool
		if pred, ok = c.engine.PredictDelete(targets[0], policy); !ok {
			return what, []string{"PredictDelete: the engine holds no observed object " + labels[0]}, nil
		}
	} else {
		var missing []types.UID
		if pred, missing = c.engine.PredictDeleteSet(targets, policy); len(missing) > 0 {
			return what, []string{fmt.Sprintf("PredictDeleteSet: missing %v", c.names(missing))}, nil
		}
	}
	what += "; predicted " + c.describe(pred)
	if res.kinds == nil {
		res.kinds = map[string]int{}
	}
	res.kinds[string(policy)]++
	for k, yes := range map[string]bool{"sets": n > 1, "with steps": pred.Order != "", "with held objects": len(pred.Waiting) > 0,
		"with orphaned": len(pred.Orphaned) > 0, "with kept": len(pred.Kept) > 0, "with more than the targets deleted": len(pred.Deleted) > n} {
		if yes {
			res.kinds[k]++
		}
	}

	removed, err := c.watchRemovals(ctx)
	if err != nil {
		return what, nil, err
	}
	defer removed.stop()
	for _, uid := range targets {
		i := c.index[uid]
		err := c.p.resource(i).Delete(ctx, c.p.name(i), metav1.DeleteOptions{PropagationPolicy: &policy})
		if err != nil && !apierrors.IsNotFound(err) {
			return what, nil, fmt.Errorf("delete o%d: %w", i, err)
		}
	}
	if err := c.settle(ctx); err != nil {
		return what, nil, fmt.Errorf("after the delete: %w", err)
	}
	mid, err := c.objects(ctx)
	if err != nil {
		return what, nil, err
	}
	// The finalizers the prediction names are removed, as their controllers (or, for a
	// foreground deletion that never finishes, a person) would: other controllers' first,
	// then foregroundDeletion from an object none of whose blocking dependents that go is
	// left; again while the cluster, settled, shows one of them on an object it names (a
	// deletion that starts only once another held object has gone).
	after := mid
	for range 2*len(pred.Waiting) + 2 {
		remove := c.toRelease(pred, after)
		if len(remove) == 0 {
			break
		}
		for uid, names := range remove {
			if err := c.removeFinalizers(ctx, c.index[uid], names); err != nil {
				return what, nil, err
			}
		}
		if err := c.settle(ctx); err != nil {
			return what, nil, fmt.Errorf("after releasing the held: %w", err)
		}
		if after, err = c.objects(ctx); err != nil {
			return what, nil, err
		}
	}
	order, err := removed.of(ctx, before, after)
	if err != nil {
		return what, nil, err
	}
	o := outcome{targets: targets, policy: policy, before: before, mid: mid, after: after, removed: order}
	return what, c.judge(pred, o), nil
}

// toRelease picks the finalizers to remove next from the objects the prediction says
// wait (see round), by uid.
func (c *checker) toRelease(pred gc.Prediction, now map[types.UID]objState) map[types.UID][]string {
	deleted := map[types.UID]bool{}
	for _, d := range pred.Deleted {
		deleted[d.Object.UID] = true
	}
	others, foreground, anyForeground := map[types.UID][]string{}, map[types.UID][]string{}, map[types.UID][]string{}
	for _, w := range pred.Waiting {
		o, there := now[w.Object.UID]
		if !there {
			continue
		}
		for _, f := range w.Finalizers {
			if !slices.Contains(o.finalizers, f) {
				continue
			}
			if f != metav1.FinalizerDeleteDependents {
				others[w.Object.UID] = append(others[w.Object.UID], f)
				continue
			}
			anyForeground[w.Object.UID] = []string{f}
			blocked := false
			for uid, d := range now {
				if uid != w.Object.UID && deleted[uid] && d.refersTo(w.Object.UID, true) {
					blocked = true
				}
			}
			if !blocked {
				foreground[w.Object.UID] = []string{f}
			}
		}
	}
	switch {
	case len(others) > 0:
		return others
	case len(foreground) > 0:
		return foreground
	}
	return anyForeground
}

// removeFinalizers removes names from object i's finalizers.
func (c *checker) removeFinalizers(ctx context.Context, i int, names []string) error {
	for range 10 {
		u, err := c.p.resource(i).Get(ctx, c.p.name(i), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		u.SetFinalizers(slices.DeleteFunc(u.GetFinalizers(), func(f string) bool { return slices.Contains(names, f) }))
		_, err = c.p.resource(i).Update(ctx, u, metav1.UpdateOptions{})
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if !apierrors.IsConflict(err) {
			return err
		}
	}
	return fmt.Errorf("finalizers of o%d: conflicts", i)
}

// describe is a prediction in short, objects by their scenario names.
func (c *checker) describe(p gc.Prediction) string {
	list := func(l []gc.PredictedObject, steps bool) string {
		var out []string
		for _, o := range l {
			s := c.name(o.Object.UID)
			if steps && o.Step > 0 {
				s += fmt.Sprintf("@%d", o.Step)
			}
			out = append(out, s)
		}
		return "[" + strings.Join(out, " ") + "]"
	}
	s := "deleted " + list(p.Deleted, true)
	for _, part := range []struct {
		name string
		l    []gc.PredictedObject
	}{{"orphaned", p.Orphaned}, {"kept", p.Kept}, {"waiting", p.Waiting}, {"targetWaitsFor", p.TargetWaitsFor}} {
		if len(part.l) > 0 {
			s += " " + part.name + " " + list(part.l, false)
		}
	}
	return s
}

func (c *checker) name(uid types.UID) string {
	if i, ok := c.index[uid]; ok {
		return fmt.Sprintf("o%d", i)
	}
	if uid == c.ghost {
		return "ghost"
	}
	return string(uid)
}

func (c *checker) names(uids []types.UID) []string {
	var out []string
	for _, u := range uids {
		out = append(out, c.name(u))
	}
	return out
}

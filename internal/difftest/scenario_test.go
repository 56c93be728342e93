package difftest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const holdFinalizer = "test.gcscope.io/hold"

// Settling: a namespace has settled when its state has not changed for settleQuiet,
// checked every settlePoll. Both collectors act within milliseconds of an event, and the
// scenarios contain nothing that fails and backs off for longer (one kind, always
// served, no webhooks), so a quiet second is the end of the cascade; settleMax bounds a
// cascade that never ends (a stuck owner is a state like any other and is compared).
const (
	settleQuiet = time.Second
	settlePoll  = 100 * time.Millisecond
	settleMax   = time.Minute
)

// spec is one ConfigMap of a scenario: its owners by index, how it names them, and
// whether it carries the hold finalizer.
type spec struct {
	owners    []int
	controls  []bool
	blocks    []bool
	dangling  bool // also names an owner that never existed
	held      bool
	selfOwned bool // names itself (patched in after creation)
}

// step is one thing done to both clusters between comparisons.
type step struct {
	what   string
	target int
	policy metav1.DeletionPropagation
}

// scenario is what a seed makes.
type scenario struct {
	seed  int64
	objs  []spec
	steps []step
}

func generate(seed int64) scenario {
	r := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	s := scenario{seed: seed}
	n := 4 + r.IntN(7)
	for i := range n {
		var sp spec
		if i > 0 {
			for range r.IntN(3) {
				o := r.IntN(i)
				if slices.Contains(sp.owners, o) {
					continue
				}
				sp.owners = append(sp.owners, o)
				sp.controls = append(sp.controls, !slices.Contains(sp.controls, true) && r.IntN(2) == 0)
				sp.blocks = append(sp.blocks, r.IntN(3) > 0)
			}
		}
		sp.dangling = r.IntN(8) == 0
		sp.held = r.IntN(5) == 0
		sp.selfOwned = r.IntN(15) == 0
		s.objs = append(s.objs, sp)
	}
	policies := []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan}
	for range 1 + r.IntN(3) {
		switch r.IntN(4) {
		case 0:
			s.steps = append(s.steps, step{what: "release", target: r.IntN(n)})
		default:
			s.steps = append(s.steps, step{what: "delete", target: r.IntN(n), policy: policies[r.IntN(len(policies))]})
		}
	}
	s.steps = append(s.steps, step{what: "release-all"})
	return s
}

func (s scenario) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d:", s.seed)
	for i, o := range s.objs {
		fmt.Fprintf(&b, " c%d%v", i, o.owners)
		if o.held {
			b.WriteString("h")
		}
		if o.dangling {
			b.WriteString("d")
		}
		if o.selfOwned {
			b.WriteString("s")
		}
	}
	for _, st := range s.steps {
		fmt.Fprintf(&b, " | %s c%d %s", st.what, st.target, st.policy)
	}
	return b.String()
}

func objName(i int) string { return fmt.Sprintf("c%d", i) }

// create builds the scenario's objects on one side, in order (owners first).
func (sd *side) create(ctx context.Context, ns string, s scenario) error {
	if _, err := sd.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	uids := map[int]types.UID{}
	for i, sp := range s.objs {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: objName(i)}}
		for j, o := range sp.owners {
			cm.OwnerReferences = append(cm.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap",
				Name: objName(o), UID: uids[o], Controller: ptr(sp.controls[j]), BlockOwnerDeletion: ptr(sp.blocks[j])})
		}
		if sp.dangling {
			cm.OwnerReferences = append(cm.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap",
				Name: "ghost", UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", s.seed)), BlockOwnerDeletion: ptr(true)})
		}
		if sp.held {
			cm.Finalizers = []string{holdFinalizer}
		}
		created, err := sd.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		uids[i] = created.UID
		if sp.selfOwned {
			patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":%q,"uid":%q,"blockOwnerDeletion":true}]}}`, created.Name, created.UID)
			if _, err := sd.client.CoreV1().ConfigMaps(ns).Patch(ctx, created.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// apply does st on one side; an object already gone is not an error (the other side
// gets the same).
func (sd *side) apply(ctx context.Context, ns string, st step) error {
	cms := sd.client.CoreV1().ConfigMaps(ns)
	var err error
	switch st.what {
	case "delete":
		policy := st.policy
		err = cms.Delete(ctx, objName(st.target), metav1.DeleteOptions{PropagationPolicy: &policy})
	case "release":
		err = sd.release(ctx, ns, objName(st.target))
	case "release-all":
		list, lerr := cms.List(ctx, metav1.ListOptions{})
		if lerr != nil {
			return lerr
		}
		for _, cm := range list.Items {
			if slices.Contains(cm.Finalizers, holdFinalizer) {
				if err := sd.release(ctx, ns, cm.Name); err != nil && !apierrors.IsNotFound(err) {
					return err
				}
			}
		}
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// release removes the hold finalizer (and only it) from name.
func (sd *side) release(ctx context.Context, ns, name string) error {
	cms := sd.client.CoreV1().ConfigMaps(ns)
	for range 5 {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !slices.Contains(cm.Finalizers, holdFinalizer) {
			return nil
		}
		cm.Finalizers = slices.DeleteFunc(cm.Finalizers, func(f string) bool { return f == holdFinalizer })
		if _, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			return err
		}
	}
	return fmt.Errorf("release %s: conflicts", name)
}

// state is a namespace's objects, normalized so that the two clusters compare: owners by
// kind and name (uids differ), finalizers sorted, deletion as a flag.
func (sd *side) state(ctx context.Context, ns string) (string, error) {
	list, err := sd.client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	var lines []string
	for _, cm := range list.Items {
		var refs []string
		for _, r := range cm.OwnerReferences {
			refs = append(refs, fmt.Sprintf("%s/%s(c=%v,b=%v)", r.Kind, r.Name, deref(r.Controller), deref(r.BlockOwnerDeletion)))
		}
		slices.Sort(refs)
		fins := slices.Sorted(slices.Values(cm.Finalizers))
		lines = append(lines, fmt.Sprintf("%s deleting=%v finalizers=%v owners=%v", cm.Name, cm.DeletionTimestamp != nil, fins, refs))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n"), nil
}

// settle waits until ns is quiet on one side and returns its state.
func (sd *side) settle(ctx context.Context, ns string) (string, error) {
	deadline := time.Now().Add(settleMax)
	last, err := sd.state(ctx, ns)
	if err != nil {
		return "", err
	}
	quietSince := time.Now()
	for time.Since(quietSince) < settleQuiet {
		if time.Now().After(deadline) {
			return last, nil // never quiet: compared as it is
		}
		time.Sleep(settlePoll)
		cur, err := sd.state(ctx, ns)
		if err != nil {
			return "", err
		}
		if cur != last {
			last, quietSince = cur, time.Now()
		}
	}
	return last, nil
}

// runScenario plays seed's scenario on both sides and returns a description of the first
// divergence ("" if none).
func runScenario(t *testing.T, up, ours *side, seed int64) string {
	ctx := context.Background()
	s := generate(seed)
	ns := fmt.Sprintf("dt-%d-%d", seed, time.Now().UnixNano()%100000)
	both := func(f func(*side) error) error {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, sd := range []*side{up, ours} {
			wg.Go(func() { errs[i] = f(sd) })
		}
		wg.Wait()
		if errs[0] != nil {
			return fmt.Errorf("upstream side: %w", errs[0])
		}
		if errs[1] != nil {
			return fmt.Errorf("gcscope side: %w", errs[1])
		}
		return nil
	}
	compare := func(after string) string {
		var states [2]string
		if err := both(func(sd *side) error {
			st, err := sd.settle(ctx, ns)
			if sd == up {
				states[0] = st
			} else {
				states[1] = st
			}
			return err
		}); err != nil {
			t.Errorf("%s: %v", s, err)
			return ""
		}
		if states[0] != states[1] {
			return fmt.Sprintf("divergence after %s\nscenario %s\nupstream:\n%s\ngcscope:\n%s", after, s, states[0], states[1])
		}
		return ""
	}
	if err := both(func(sd *side) error { return sd.create(ctx, ns, s) }); err != nil {
		t.Errorf("%s: creating: %v", s, err)
		return ""
	}
	if d := compare("creation"); d != "" {
		return d
	}
	for i, st := range s.steps {
		if err := both(func(sd *side) error { return sd.apply(ctx, ns, st) }); err != nil {
			t.Errorf("%s: step %d: %v", s, i, err)
			return ""
		}
		if d := compare(fmt.Sprintf("step %d (%s c%d %s)", i, st.what, st.target, st.policy)); d != "" {
			return d
		}
	}
	return ""
}

func ptr[T any](v T) *T { return &v }

func deref(b *bool) bool { return b != nil && *b }

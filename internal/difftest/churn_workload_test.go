package difftest

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The churn benchmark's workload: groups of objects, each created, re-owned and deleted by
// a plan drawn from the seed and the group's number, so every run writes the same groups.
// As many groups run at once as it takes to keep up with the paced rate; every write takes
// one token of the pace. A group: owner A (a ConfigMap), owner B (a Secret), three
// dependents owned by A (some also by B), three patches that add or drop a dependent's
// reference to B, then A deleted with a drawn policy (Background, Foreground or Orphan: the
// collector's cascades) and B in the background.

const (
	churnDependents = 3
	churnRefPatches = 3
)

type churnOp uint8

const (
	churnCreate churnOp = iota
	churnPatch
	churnDelete
)

// churnWrite is one write of the workload and what the graph must show for it.
type churnWrite struct {
	uid            types.UID
	op             churnOp
	owners         uint64 // churnPatch: ownersKey of the references written
	sent, answered time.Time
}

// churnWorkload is the paced writer's settings (GCSCOPE_CHURN_RATE writes a second for
// GCSCOPE_CHURN_SECONDS; default 1,000 for 60 s).
type churnWorkload struct {
	rate     int
	duration time.Duration
	seed     uint64
}

func churnSettings(b *testing.B) churnWorkload {
	w := churnWorkload{rate: 1000, duration: 60 * time.Second, seed: 26}
	for _, v := range []struct {
		name string
		set  func(n int)
	}{
		{"GCSCOPE_CHURN_RATE", func(n int) { w.rate = n }},
		{"GCSCOPE_CHURN_SECONDS", func(n int) { w.duration = time.Duration(n) * time.Second }},
	} {
		if s := os.Getenv(v.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				b.Fatalf("%s=%q: want a positive number", v.name, s)
			}
			v.set(n)
		}
	}
	return w
}

// inFlight is how many groups run at once: enough to keep the rate while a write takes
// up to 125 ms, and each group lives about as long (ten writes).
func (w churnWorkload) inFlight() int { return max(8, w.rate/8) }

// churnRun is what one run of the workload did.
type churnRun struct {
	writes []churnWrite
	wall   time.Duration // from the first token to the last write answered
	failed int           // writes the apiserver refused or that timed out
	groups int64         // groups started
}

func (r churnRun) rate() float64 { return float64(len(r.writes)) / r.wall.Seconds() }

// run writes into ns until the duration is over and every write in flight is answered.
func (w churnWorkload) run(ctx context.Context, client kubernetes.Interface, ns string) churnRun {
	tokens := make(chan struct{})
	start := time.Now()
	go w.pace(ctx, tokens, start)
	var (
		mu     sync.Mutex
		run    churnRun
		next   atomic.Int64
		failed atomic.Int64
		wg     sync.WaitGroup
	)
	record := func(wr churnWrite) {
		mu.Lock()
		run.writes = append(run.writes, wr)
		mu.Unlock()
	}
	for range w.inFlight() {
		wg.Go(func() {
			for {
				g := next.Add(1) - 1
				if !w.group(ctx, client, ns, g, tokens, record, &failed) {
					return
				}
			}
		})
	}
	wg.Wait()
	run.wall = time.Since(start)
	run.failed = int(failed.Load())
	run.groups = next.Load()
	slices.SortFunc(run.writes, func(a, b churnWrite) int { return a.sent.Compare(b.sent) })
	return run
}

// pace hands out rate tokens a second for the duration, then closes tokens. Behind (the
// writers were slow), it catches up at once, so the average holds while it can; the
// duration ends the run all the same, and the rate reached is what is reported.
func (w churnWorkload) pace(ctx context.Context, tokens chan<- struct{}, start time.Time) {
	defer close(tokens)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	given := 0
	for elapsed := time.Duration(0); elapsed < w.duration; elapsed = time.Since(start) {
		for want := int(elapsed.Seconds() * float64(w.rate)); given < want; given++ {
			select {
			case tokens <- struct{}{}:
			case <-ctx.Done():
				return
			}
			if time.Since(start) >= w.duration {
				return
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

// churnObject is one object of a group.
type churnObject struct {
	name   string
	secret bool
	uid    types.UID
	refs   []metav1.OwnerReference
}

func (o *churnObject) ref(controller bool) metav1.OwnerReference {
	kind := "ConfigMap"
	if o.secret {
		kind = "Secret"
	}
	r := metav1.OwnerReference{APIVersion: "v1", Kind: kind, Name: o.name, UID: o.uid, BlockOwnerDeletion: ptr.To(true)}
	if controller {
		r.Controller = ptr.To(true)
	}
	return r
}

// group plays group g's plan, one token per write; false once the tokens have run out.
// Failed writes are counted and end the group (its later writes would depend on them).
func (w churnWorkload) group(ctx context.Context, client kubernetes.Interface, ns string, g int64,
	tokens <-chan struct{}, record func(churnWrite), failed *atomic.Int64) bool {
	rng := rand.New(rand.NewPCG(w.seed, uint64(g)))
	// Each write is bounded in time: a stalled apiserver ends the run, not the benchmark.
	write := func(op churnOp, o *churnObject, call func(ctx context.Context) (types.UID, error)) (ok, more bool) {
		if _, open := <-tokens; !open {
			return false, false
		}
		callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		sent := time.Now()
		uid, err := call(callCtx)
		if err != nil {
			failed.Add(1)
			return false, true
		}
		if op == churnCreate {
			o.uid = uid
		}
		wr := churnWrite{uid: o.uid, op: op, sent: sent, answered: time.Now()}
		if op == churnPatch {
			wr.owners = ownersKey(refUIDs(o.refs))
		}
		record(wr)
		return true, true
	}
	cms, secrets := client.CoreV1().ConfigMaps(ns), client.CoreV1().Secrets(ns)
	create := func(o *churnObject) (bool, bool) {
		return write(churnCreate, o, func(ctx context.Context) (types.UID, error) {
			meta := metav1.ObjectMeta{Name: o.name, OwnerReferences: o.refs}
			if o.secret {
				s, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: meta}, metav1.CreateOptions{})
				if err != nil {
					return "", err
				}
				return s.UID, nil
			}
			c, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta}, metav1.CreateOptions{})
			if err != nil {
				return "", err
			}
			return c.UID, nil
		})
	}
	base := fmt.Sprintf("g%07d", g)
	a := &churnObject{name: base + "-a"}
	b := &churnObject{name: base + "-b", secret: true}
	for _, o := range []*churnObject{a, b} {
		if ok, more := create(o); !ok {
			return more
		}
	}
	deps := make([]*churnObject, churnDependents)
	for i := range deps {
		deps[i] = &churnObject{name: fmt.Sprintf("%s-d%d", base, i), secret: i%2 == 1, refs: []metav1.OwnerReference{a.ref(true)}}
		if rng.IntN(3) == 0 {
			deps[i].refs = append(deps[i].refs, b.ref(false))
		}
		if ok, more := create(deps[i]); !ok {
			return more
		}
	}
	for range churnRefPatches {
		d := deps[rng.IntN(len(deps))]
		if len(d.refs) == 1 {
			d.refs = append(d.refs, b.ref(false))
		} else {
			d.refs = d.refs[:1]
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": d.refs}})
		ok, more := write(churnPatch, d, func(ctx context.Context) (types.UID, error) {
			var err error
			if d.secret {
				_, err = secrets.Patch(ctx, d.name, types.MergePatchType, patch, metav1.PatchOptions{})
			} else {
				_, err = cms.Patch(ctx, d.name, types.MergePatchType, patch, metav1.PatchOptions{})
			}
			return "", err
		})
		if !ok {
			return more
		}
	}
	policies := []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan}
	for i, o := range []*churnObject{a, b} {
		policy := metav1.DeletePropagationBackground
		if i == 0 {
			policy = policies[rng.IntN(len(policies))]
		}
		ok, more := write(churnDelete, o, func(ctx context.Context) (types.UID, error) {
			opts := metav1.DeleteOptions{PropagationPolicy: &policy}
			if o.secret {
				return "", secrets.Delete(ctx, o.name, opts)
			}
			return "", cms.Delete(ctx, o.name, opts)
		})
		if !ok {
			return more
		}
	}
	return true
}

func refUIDs(refs []metav1.OwnerReference) []types.UID {
	out := make([]types.UID, len(refs))
	for i, r := range refs {
		out[i] = r.UID
	}
	return out
}

// ownersKey identifies a set of owners whatever their order.
func ownersKey(uids []types.UID) uint64 {
	uids = slices.Clone(uids)
	slices.Sort(uids)
	h := fnv.New64a()
	for _, u := range uids {
		h.Write([]byte(u))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// Package scenario plays garbage-collection cases on gcscope's embedded cluster, so that a
// user can watch the collector act: each run creates its objects in a fresh namespace
// (play-<scenario>-<n>), waits until the engine has observed them, then does what the case
// needs (a delete with a chosen policy, a CRD removed, a namespace deleted) and follows the
// outcome step by step.
//
// It writes with the credentials it is given, at will: it must only ever be handed the
// embedded control plane, never a real cluster (cmd/gcscope decides).
package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/gcscope/gcscope/cluster/demo"
	"github.com/gcscope/gcscope/gc"
)

const (
	// LabelRun marks every namespace and cluster-scoped object a run creates with the run's
	// id, so that a cleanup finds them, after a restart too.
	LabelRun = "play.gcscope.io/run"
	// LabelScenario names the scenario of a run's namespaces.
	LabelScenario = "play.gcscope.io/scenario"
	// NamespacePrefix starts the name of every namespace a run creates.
	NamespacePrefix = "play-"
	// HoldFinalizer is the finalizer no controller removes; the demo uses it too.
	HoldFinalizer = demo.HoldFinalizer
)

// Run states.
const (
	RunRunning = "running"
	RunWaiting = "waiting" // for the user: release the hold
	RunDone    = "done"
	RunFailed  = "failed"
	RunStopped = "stopped" // cancelled by a cleanup or gcscope's shutdown
)

// Step states.
const (
	StepPending = "pending"
	StepRunning = "running"
	StepWaiting = "waiting"
	StepDone    = "done"
	StepFailed  = "failed"
)

// Errors the server maps to answers.
var (
	ErrUnknownScenario = errors.New("no such scenario")
	ErrUnknownRun      = errors.New("no such run")
	ErrNothingHeld     = errors.New("nothing in the run is held: no hold finalizer, no APIService")
	ErrBusy            = errors.New("too many scenarios are playing")
)

// Info describes a scenario to the user.
type Info struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Description says, in one paragraph, what the user will see and why.
	Description string `json:"description"`
	// Steps are the titles of the run's steps, in order.
	Steps []string `json:"steps"`
}

// Step is one step of a run.
type Step struct {
	Title string `json:"title"`
	State string `json:"state"`
	// Detail says what happened (done), what is awaited (waiting), or what went wrong.
	Detail string    `json:"detail,omitempty"`
	At     time.Time `json:"at,omitzero"`
}

// Object is an object a run created, or one the cluster's controllers created for it.
type Object struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Namespace  string    `json:"namespace,omitempty"`
	Name       string    `json:"name"`
	UID        types.UID `json:"uid"`
}

// Run is the state of one play of a scenario.
type Run struct {
	// ID is the run's namespace: play-<scenario>-<n>.
	ID       string `json:"id"`
	Scenario string `json:"scenario"`
	Title    string `json:"title"`
	// Namespaces are every namespace the run created (the first is ID).
	Namespaces []string `json:"namespaces"`
	State      string   `json:"state"`
	// Step is the index of the current (or last) step.
	Step  int    `json:"step"`
	Steps []Step `json:"steps"`
	// Focus is the scenario's main object, once created: the page selects it.
	Focus   types.UID `json:"focus,omitempty"`
	Objects []Object  `json:"objects"`
	// Hold: the run waits on a hold (an object's hold finalizer, an unavailable
	// APIService) and on the user to release it.
	Hold     bool      `json:"hold,omitempty"`
	Error    string    `json:"error,omitempty"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
}

func (r Run) active() bool { return r.State == RunRunning || r.State == RunWaiting }

// Engine is what the player asks of the collector (*gc.GarbageCollector is one).
type Engine interface {
	Node(types.UID) (gc.NodeDetail, bool)
	RefreshDiscovery()
}

// Options configure a Player.
type Options struct {
	// Engine, when set, is waited on: a run acts only once the collector has observed the
	// objects it created, as a user looks before deleting.
	Engine Engine
	Logger *slog.Logger
	// Pause is how long each step's result stays before the next step acts, so that the
	// user sees the objects before they are deleted; 0: none.
	Pause time.Duration
	// StepTimeout bounds a step's wait for the cluster or the collector (not the user's
	// release of a hold); default 3 minutes, enough for a cascade in slow motion.
	StepTimeout time.Duration
	// MaxActive bounds the runs playing at once; default 3.
	MaxActive int
}

// maxKept bounds the runs the player remembers; their namespaces stay until a cleanup.
const maxKept = 30

// Player plays scenarios and keeps their runs' state.
type Player struct {
	opts Options
	log  *slog.Logger
	core kubernetes.Interface
	ext  apiextensionsclient.Interface
	dyn  dynamic.Interface

	ctx    context.Context // ends with Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	runs     []*run // oldest first
	next     map[string]int
	starting int // Plays creating their namespaces, counted as active
}

type run struct {
	status Run // guarded by Player.mu
	cancel context.CancelFunc
	done   chan struct{}
}

// NewPlayer returns a player writing to the cluster of cfg (the embedded one).
func NewPlayer(cfg *rest.Config, o Options) (*Player, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.StepTimeout <= 0 {
		o.StepTimeout = 3 * time.Minute
	}
	if o.MaxActive <= 0 {
		o.MaxActive = 3
	}
	cfg = rest.CopyConfig(cfg)
	// Its own budget: a scenario's polling must not spend the engine's.
	cfg.QPS, cfg.Burst = 20, 40
	p := &Player{opts: o, log: o.Logger, next: map[string]int{}}
	var err error
	if p.core, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if p.ext, err = apiextensionsclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if p.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	// No run is live in a new process: an APIService a run left (gcscope was killed while
	// it waited) would block every namespace deletion of the cluster. Remove it now.
	sweep, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	if left, err := p.deleteAPIServices(sweep, LabelRun); err != nil {
		p.log.Warn("removing the APIServices earlier runs left", "err", err)
	} else if len(left) > 0 {
		p.log.Info("removed the APIServices earlier runs left (they blocked every namespace deletion)", "apiServices", left)
	}
	return p, nil
}

// Close stops the runs in progress and waits for them (their objects stay).
func (p *Player) Close() {
	p.cancel()
	p.wg.Wait()
}

// Scenarios lists the scenarios, in menu order.
func (p *Player) Scenarios() []Info {
	out := make([]Info, len(scenarios))
	for i, s := range scenarios {
		out[i] = s.info()
	}
	return out
}

// Runs returns the runs the player remembers, oldest first.
func (p *Player) Runs() []Run {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Run, len(p.runs))
	for i, r := range p.runs {
		out[i] = r.status.clone()
	}
	return out
}

// Status returns the state of run id.
func (p *Player) Status(id string) (Run, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.find(id); r != nil {
		return r.status.clone(), true
	}
	return Run{}, false
}

func (r Run) clone() Run {
	r.Namespaces = slices.Clone(r.Namespaces)
	r.Steps = slices.Clone(r.Steps)
	r.Objects = slices.Clone(r.Objects)
	return r
}

// find must be called with p.mu held.
func (p *Player) find(id string) *run {
	for _, r := range p.runs {
		if r.status.ID == id {
			return r
		}
	}
	return nil
}

// Play starts a run of scenario id: its namespaces exist when Play returns, and the run
// goes on in the background until done, failed or stopped. It talks to the cluster.
func (p *Player) Play(ctx context.Context, id string) (Run, error) {
	i := slices.IndexFunc(scenarios, func(s scenario) bool { return s.ID == id })
	if i < 0 {
		return Run{}, fmt.Errorf("%w %q", ErrUnknownScenario, id)
	}
	sc := scenarios[i]
	p.mu.Lock()
	active := p.starting
	for _, r := range p.runs {
		if r.status.active() {
			active++
		}
	}
	if active >= p.opts.MaxActive {
		p.mu.Unlock()
		return Run{}, fmt.Errorf("%w: %d at once at most; wait for one to finish, or clean up", ErrBusy, p.opts.MaxActive)
	}
	p.starting++
	p.mu.Unlock()
	namespaces, err := p.createNamespaces(ctx, sc)
	p.mu.Lock()
	p.starting--
	p.mu.Unlock()
	if err != nil {
		return Run{}, err
	}
	runCtx, cancel := context.WithCancel(p.ctx)
	r := &run{cancel: cancel, done: make(chan struct{}), status: Run{
		ID: namespaces[0], Scenario: sc.ID, Title: sc.Title, Namespaces: namespaces,
		State: RunRunning, Objects: []Object{}, Started: time.Now(),
	}}
	x := &runner{p: p, r: r, ns: namespaces[0], namespaces: namespaces}
	steps := sc.steps(x)
	for _, st := range steps {
		r.status.Steps = append(r.status.Steps, Step{Title: st.title, State: StepPending})
	}
	p.mu.Lock()
	p.runs = append(p.runs, r)
	p.forgetOld()
	status := r.status.clone()
	p.mu.Unlock()
	p.log.Info("scenario started", "scenario", sc.ID, "run", r.status.ID)

	p.wg.Go(func() {
		defer close(r.done)
		defer cancel()
		err := x.play(runCtx, steps)
		p.update(r, func(s *Run) {
			s.Finished, s.Hold = time.Now(), false
			switch {
			case err == nil:
				s.State = RunDone
			case runCtx.Err() != nil:
				s.State, s.Error = RunStopped, "stopped before the end (cleanup or shutdown)"
			default:
				s.State, s.Error = RunFailed, err.Error()
			}
		})
		p.log.Info("scenario finished", "scenario", sc.ID, "run", r.status.ID, "err", err)
	})
	return status, nil
}

// forgetOld drops the oldest finished runs beyond maxKept; p.mu held.
func (p *Player) forgetOld() {
	for len(p.runs) > maxKept {
		i := slices.IndexFunc(p.runs, func(r *run) bool { return !r.status.active() })
		if i < 0 {
			return
		}
		p.runs = slices.Delete(p.runs, i, i+1)
	}
}

// createNamespaces creates the run's namespaces, play-<id>-<n> (and its extra ones), at
// the first n whose names are free: names left by an earlier process are skipped.
func (p *Player) createNamespaces(ctx context.Context, sc scenario) ([]string, error) {
	p.mu.Lock()
	n := p.next[sc.ID]
	p.mu.Unlock()
	for range 200 {
		n++
		base := fmt.Sprintf("%s%s-%d", NamespacePrefix, sc.ID, n)
		names := []string{base}
		for _, suffix := range sc.extraNamespaces {
			names = append(names, base+suffix)
		}
		free := true
		for _, name := range names {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				LabelRun: base, LabelScenario: sc.ID, demo.PartOfLabel: "gcscope-play"}}}
			_, err := p.core.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: fieldManager})
			if apierrors.IsAlreadyExists(err) {
				free = false
				break
			}
			if err != nil {
				return nil, fmt.Errorf("create namespace %s: %w", name, err)
			}
		}
		if free {
			p.mu.Lock()
			p.next[sc.ID] = max(p.next[sc.ID], n)
			p.mu.Unlock()
			return names, nil
		}
	}
	return nil, fmt.Errorf("no free namespace name for %s after 200 tries; clean up the played namespaces", sc.ID)
}

// update changes r's status under the lock.
func (p *Player) update(r *run, f func(*Run)) {
	p.mu.Lock()
	f(&r.status)
	p.mu.Unlock()
}

// holdFinalizers are the finalizers a release removes: no controller of the cluster does.
var holdFinalizers = []string{HoldFinalizer, ControllerFinalizer}

// Release lifts the holds of run id: it removes the hold finalizers from every Pod and
// ConfigMap of the run that carries one, so that a cascade or a namespace waiting on them
// can finish, and deletes the APIServices the run made, so that namespace deletions can
// finish again. It talks to the cluster.
func (p *Player) Release(ctx context.Context, id string) (Run, error) {
	p.mu.Lock()
	r := p.find(id)
	var namespaces []string
	if r != nil {
		namespaces = slices.Clone(r.status.Namespaces)
	}
	p.mu.Unlock()
	if r == nil {
		return Run{}, fmt.Errorf("%w %q", ErrUnknownRun, id)
	}
	released, apiServices, err := p.release(ctx, LabelRun+"="+id, namespaces)
	if err != nil {
		return Run{}, err
	}
	if released == 0 {
		return Run{}, ErrNothingHeld
	}
	p.log.Info("scenario hold released", "run", id, "objects", released, "apiServices", apiServices)
	st, _ := p.Status(id)
	return st, nil
}

// release deletes the APIServices selector finds (released first: while one is
// unavailable no namespace can finish deleting) and removes the hold finalizers from the
// Pods and ConfigMaps of namespaces. released counts both.
func (p *Player) release(ctx context.Context, selector string, namespaces []string) (released int, apiServices []string, err error) {
	if apiServices, err = p.deleteAPIServices(ctx, selector); err != nil {
		return 0, apiServices, err
	}
	released = len(apiServices)
	for _, ns := range namespaces {
		for _, gvr := range []schema.GroupVersionResource{corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithResource("configmaps")} {
			c := p.dyn.Resource(gvr).Namespace(ns)
			list, err := c.List(ctx, metav1.ListOptions{})
			if err != nil {
				return released, apiServices, err
			}
			for _, u := range list.Items {
				held := false
				for _, f := range holdFinalizers {
					if slices.Contains(u.GetFinalizers(), f) {
						if err := p.unhold(ctx, c, u.GetName(), f); err != nil {
							return released, apiServices, err
						}
						held = true
					}
				}
				if held {
					released++
				}
			}
		}
	}
	return released, apiServices, nil
}

// unhold removes finalizer f from one object, keeping its other finalizers, as an
// operator would by hand: a JSON patch that tests that f is still at the index read
// before removing it (re-read and retried when the list changed meanwhile).
func (p *Player) unhold(ctx context.Context, c dynamic.ResourceInterface, name, f string) error {
	return retry.OnError(retry.DefaultRetry, apierrors.IsInvalid, func() error {
		u, err := c.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		i := slices.Index(u.GetFinalizers(), f)
		if i < 0 {
			return nil
		}
		_, err = c.Patch(ctx, name, types.JSONPatchType, releasePatch(f, i), metav1.PatchOptions{FieldManager: fieldManager})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// releasePatch is the JSON patch that removes finalizer f at index i, and fails (422)
// instead of removing another one if the list changed: gc.releaseCommand's patch.
func releasePatch(f string, i int) []byte {
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value string `json:"value,omitempty"`
	}
	path := fmt.Sprintf("/metadata/finalizers/%d", i)
	b, _ := json.Marshal([]op{{Op: "test", Path: path, Value: f}, {Op: "remove", Path: path}})
	return b
}

// Cleaned lists what a cleanup deleted.
type Cleaned struct {
	Namespaces  []string `json:"namespaces"`
	CRDs        []string `json:"crds"`
	APIServices []string `json:"apiServices"`
	// Released counts the objects whose hold finalizers were removed, and the APIServices.
	Released int `json:"released"`
}

// Cleanup stops run id (every run when id is ""), releases the holds in its namespaces
// (its APIServices deleted first) and deletes them, and the CRDs it created. Namespaces are found by label, so runs of an
// earlier process are cleaned too when id is "". It talks to the cluster.
func (p *Player) Cleanup(ctx context.Context, id string) (Cleaned, error) {
	selector := LabelRun
	p.mu.Lock()
	var stop []*run
	if id != "" {
		r := p.find(id)
		if r == nil {
			p.mu.Unlock()
			return Cleaned{}, fmt.Errorf("%w %q", ErrUnknownRun, id)
		}
		selector = LabelRun + "=" + id
		stop = []*run{r}
	} else {
		stop = slices.Clone(p.runs)
	}
	p.mu.Unlock()
	for _, r := range stop {
		r.cancel()
		<-r.done
	}

	var out Cleaned
	nss, err := p.core.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return out, err
	}
	var names []string
	for _, ns := range nss.Items {
		names = append(names, ns.Name)
	}
	// A held Pod would keep its namespace terminating for ever, an unavailable APIService
	// every namespace of the cluster.
	if out.Released, out.APIServices, err = p.release(ctx, selector, names); err != nil {
		return out, err
	}
	for _, ns := range nss.Items {
		if ns.DeletionTimestamp != nil {
			continue
		}
		err := p.core.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &ns.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return out, fmt.Errorf("delete namespace %s: %w", ns.Name, err)
		}
		out.Namespaces = append(out.Namespaces, ns.Name)
	}
	crds, err := p.ext.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return out, err
	}
	for _, crd := range crds.Items {
		if crd.DeletionTimestamp != nil {
			continue
		}
		err := p.ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crd.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return out, fmt.Errorf("delete CRD %s: %w", crd.Name, err)
		}
		out.CRDs = append(out.CRDs, crd.Name)
	}
	p.mu.Lock()
	p.runs = slices.DeleteFunc(p.runs, func(r *run) bool { return slices.Contains(stop, r) })
	p.mu.Unlock()
	p.log.Info("scenario namespaces cleaned up", "namespaces", out.Namespaces, "crds", out.CRDs, "apiServices", out.APIServices)
	return out, nil
}

// fieldManager names the player in managedFields.
const fieldManager = "gcscope-play"

// runner is what a scenario's steps use to act and to report.
type runner struct {
	p          *Player
	r          *run
	ns         string   // the run's namespace
	namespaces []string // all of them, ns first
	nudged     time.Time
	atEnd      []func()
}

// add records an object of the run; focus makes it the run's main object.
func (x *runner) add(apiVersion, kind string, obj metav1.Object, focus bool) {
	x.p.update(x.r, func(s *Run) {
		if slices.ContainsFunc(s.Objects, func(o Object) bool { return o.UID == obj.GetUID() }) {
			return
		}
		s.Objects = append(s.Objects, Object{APIVersion: apiVersion, Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()})
		if focus {
			s.Focus = obj.GetUID()
		}
	})
}

// meta is the metadata of an object the run creates.
func (x *runner) meta(ns, name string, owners ...metav1.OwnerReference) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: owners,
		Labels: map[string]string{LabelRun: x.ns}}
}

// until polls cond every 100 ms for up to the step timeout; what names the wait in the
// error. Errors of cond end the wait.
func (x *runner) until(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, x.p.opts.StepTimeout, true, cond)
	if err != nil && ctx.Err() == nil && wait.Interrupted(err) {
		return fmt.Errorf("%s: not after %s", what, x.p.opts.StepTimeout)
	}
	return err
}

// waitObserved waits until the collector has observed uids (nothing to wait for without
// an engine). While it waits it asks the engine to re-read discovery every few seconds:
// the owner may be of a resource created a moment ago.
func (x *runner) waitObserved(ctx context.Context, uids ...types.UID) error {
	e := x.p.opts.Engine
	if e == nil {
		return nil
	}
	return x.until(ctx, "the collector to observe the objects", func(context.Context) (bool, error) {
		for _, u := range uids {
			if n, ok := e.Node(u); !ok || !n.Observed {
				if time.Since(x.nudged) > 2*time.Second {
					x.nudged = time.Now()
					e.RefreshDiscovery()
				}
				return false, nil
			}
		}
		return true, nil
	})
}

// since says how long ago t was, for details.
func since(t time.Time) string {
	d := time.Since(t)
	if d < time.Second {
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

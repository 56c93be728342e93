// Package fleet runs the clusters of several kubeconfig contexts in one gcscope: each its
// own engine, started when the page or the API first opens it (or all at once), each with
// its own state, so that a context that cannot be reached says why and holds no other.
// It is the server's registry of clusters (server/registry).
package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/registry"
)

// Member is one context of the fleet.
type Member struct {
	Name string
	// Config is how to reach its cluster; nil when the kubeconfig cannot give one, and
	// Err says why (the member is then failed from the start).
	Config *rest.Config
	Err    error
	// Reload reads the kubeconfig again, for a member without Config opened again (its
	// client certificate's file, say, is there now); nil: never.
	Reload func() (*rest.Config, error)
}

// Engine is what the fleet runs of a cluster's engine (*gc.GarbageCollector).
type Engine interface {
	Run(ctx context.Context) error
	Started() <-chan struct{}
}

// Built is a cluster built by Options.Build: what the server serves of it, its engine
// (not yet run), and what undoes the rest once the engine has stopped.
type Built struct {
	Cluster registry.Cluster
	Engine  Engine
	Stop    func()
}

// Options configure a Fleet.
type Options struct {
	// Members are the contexts; the first is the default one.
	Members []Member
	// Build makes a cluster's engine and what goes around it, once its apiserver answered.
	Build func(ctx context.Context, name string, config *rest.Config) (*Built, error)
	// RetryAfter is how long a failed member waits before being opened starts it again;
	// 0: 5 s. A member that failed is also started again by itself, after RetryAfter, then
	// twice as long each time it fails again, up to a minute.
	RetryAfter time.Duration
	// ConnectTimeout bounds the first question to a member's apiserver; 0: 10 s.
	ConnectTimeout time.Duration
	// CheckEvery is how often a ready member's apiserver is asked again whether it
	// answers (its engine goes on, and recovers by itself; its state says why not); 0: 15 s.
	CheckEvery time.Duration
	Logger     *slog.Logger
}

// Fleet is the members and where each is.
type Fleet struct {
	o       Options
	ctx     context.Context // the engines' lifetime
	cancel  context.CancelFunc
	members []*member
	wg      sync.WaitGroup
}

// member is one context's cluster: its state, and its engine once built.
type member struct {
	Member
	mu      sync.Mutex
	state   registry.State
	reason  string
	since   time.Time
	cluster *registry.Cluster // while syncing or ready
	engine  Engine            // while syncing or ready
	// unreachable: why a ready member's apiserver did not answer when last asked ("": it did)
	unreachable string
	// failures in a row, for the delay of the next retry by itself
	failures int
}

// maxRetryDelay bounds the delay between a failed member's retries by itself.
const maxRetryDelay = time.Minute

// New makes the fleet; no member starts before Start or Open.
func New(o Options) (*Fleet, error) {
	if len(o.Members) == 0 {
		return nil, errors.New("fleet: no member")
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = 5 * time.Second
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	if o.CheckEvery <= 0 {
		o.CheckEvery = 15 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	f := &Fleet{o: o}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	seen := map[string]bool{}
	for _, m := range o.Members {
		if seen[m.Name] {
			return nil, fmt.Errorf("fleet: context %q given twice", m.Name)
		}
		seen[m.Name] = true
		mm := &member{Member: m, state: registry.Idle, since: time.Now()}
		if m.Config == nil {
			mm.state, mm.reason = registry.Failed, oneLine(m.Err)
		}
		f.members = append(f.members, mm)
	}
	return f, nil
}

// Start starts the default member, or every member with all.
func (f *Fleet) Start(all bool) {
	for i, m := range f.members {
		if i == 0 || all {
			f.open(m)
		}
	}
}

// stopTimeout bounds how long Stop waits for the engines (an engine stopping mid-list
// can take a while; gcscope is going away).
const stopTimeout = 2 * time.Second

// Stop stops every engine and waits for them, and what was built around them, at most
// stopTimeout.
func (f *Fleet) Stop() {
	f.cancel()
	done := make(chan struct{})
	go func() {
		f.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(stopTimeout):
		f.o.Logger.Warn("garbage collectors still stopping; not waiting longer")
	}
}

// List implements registry.Clusters.
func (f *Fleet) List() []registry.Status {
	out := make([]registry.Status, len(f.members))
	for i, m := range f.members {
		out[i] = m.status(i == 0)
	}
	return out
}

// Open implements registry.Clusters.
func (f *Fleet) Open(name string, start bool) (*registry.Cluster, registry.Status, bool) {
	for i, m := range f.members {
		if m.Name != name {
			continue
		}
		c := m.current()
		if start {
			c = f.open(m)
		}
		return c, m.status(i == 0), true
	}
	return nil, registry.Status{}, false
}

// Ready reports nil once the default member's engine has synced.
func (f *Fleet) Ready() error {
	st := f.members[0].status(true)
	if st.State == registry.Ready {
		return nil
	}
	if st.Reason != "" {
		return fmt.Errorf("cluster %q %s: %s", st.Name, st.State, st.Reason)
	}
	return fmt.Errorf("cluster %q %s", st.Name, st.State)
}

func (m *member) status(def bool) registry.Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := registry.Status{Name: m.Name, State: m.state, Reason: m.reason, Since: m.since, Default: def}
	if m.Config != nil {
		st.Server = m.Config.Host
	}
	if m.state == registry.Ready {
		st.Reason = m.unreachable
		if st.Reason == "" {
			st.Reason = trouble(m.engine)
		}
	}
	return st
}

// trouble says what keeps a ready engine from seeing the cluster whole: discovery that
// finds nothing, or resources it cannot list or watch (no permission, an API down).
func trouble(e Engine) string {
	se, ok := e.(interface{ SyncState() gc.SyncState })
	if !ok {
		return ""
	}
	st := se.SyncState()
	if st.Discovery != "" {
		return st.Discovery
	}
	if len(st.Failing) == 0 {
		return ""
	}
	first := slices.Min(slices.Collect(maps.Keys(st.Failing)))
	return fmt.Sprintf("%d of %d monitored resources cannot be listed or watched (%s: %s)", len(st.Failing), len(st.Resources), first, oneLine(errors.New(st.Failing[first])))
}

// current is m's cluster, nil while it has no engine.
func (m *member) current() *registry.Cluster {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cluster
}

// set moves m to state; m.mu held.
func (m *member) set(state registry.State, reason string) {
	m.state, m.reason, m.since = state, reason, time.Now()
}

// open starts m when it is idle, or failed long enough ago; it returns its cluster.
func (f *Fleet) open(m *member) *registry.Cluster {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Config == nil && m.Reload != nil && time.Since(m.since) >= f.o.RetryAfter && f.ctx.Err() == nil {
		rc, err := m.Reload()
		if err != nil {
			m.set(registry.Failed, oneLine(err))
		} else {
			m.Config = rc
		}
	}
	if m.Config == nil || f.ctx.Err() != nil {
		return m.cluster
	}
	if m.state == registry.Idle || (m.state == registry.Failed && time.Since(m.since) >= f.o.RetryAfter) {
		m.set(registry.Connecting, "asking "+m.Config.Host+" for its version")
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.run(m)
		}()
	}
	return m.cluster
}

// run connects to m's cluster, builds and runs its engine until the fleet stops or the
// engine fails, and records each step in m's state.
func (f *Fleet) run(m *member) {
	log := f.o.Logger.With("context", m.Name)
	fail := func(err error) {
		log.Warn("cluster failed", "err", err)
		m.mu.Lock()
		m.cluster, m.engine, m.unreachable = nil, nil, ""
		m.set(registry.Failed, oneLine(err))
		m.failures++
		delay := min(f.o.RetryAfter<<min(m.failures-1, 10), max(maxRetryDelay, f.o.RetryAfter))
		m.mu.Unlock()
		// Retried by itself, so that a cluster back up is seen without anyone asking (the
		// default one's state is gcscope's readiness).
		time.AfterFunc(delay, func() { f.open(m) })
	}
	if err := f.ping(m.Config); err != nil {
		if apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) {
			fail(fmt.Errorf("%s refused the context's credentials: %v", m.Config.Host, err))
		} else {
			fail(fmt.Errorf("cannot reach %s: %v", m.Config.Host, err))
		}
		return
	}
	b, err := f.o.Build(f.ctx, m.Name, m.Config)
	if err != nil {
		fail(err)
		return
	}
	defer b.Stop()
	m.mu.Lock()
	m.cluster, m.engine = &b.Cluster, b.Engine
	m.set(registry.Syncing, "the garbage collector lists every resource it monitors")
	m.mu.Unlock()
	log.Info("cluster syncing", "server", m.Config.Host)

	done := make(chan error, 1)
	go func() { done <- b.Engine.Run(f.ctx) }()
	select {
	case <-b.Engine.Started():
		m.mu.Lock()
		m.set(registry.Ready, "")
		m.failures = 0
		m.mu.Unlock()
		log.Info("cluster ready")
	case err := <-done:
		if f.ctx.Err() == nil {
			fail(fmt.Errorf("garbage collector: %v", err))
		}
		return
	}
	check := time.NewTicker(f.o.CheckEvery)
	defer check.Stop()
	for {
		select {
		case err := <-done:
			if f.ctx.Err() == nil {
				fail(fmt.Errorf("garbage collector stopped: %v", err))
			}
			return
		case <-check.C:
			why := ""
			if err := f.ping(m.Config); err != nil {
				why = fmt.Sprintf("%s does not answer: %s (the engine goes on, and catches up when it does)", m.Config.Host, oneLine(err))
			}
			m.mu.Lock()
			m.unreachable = why
			m.mu.Unlock()
		}
	}
}

// ping asks the apiserver for its version: reachable, and the credentials work.
func (f *Fleet) ping(rc *rest.Config) error {
	rc = rest.CopyConfig(rc)
	rc.Timeout = f.o.ConnectTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return err
	}
	_, err = dc.ServerVersion()
	return err
}

func oneLine(err error) string {
	if err == nil {
		return ""
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}

package testkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/gcscope/gcscope/cluster"
)

// Options choose a control plane and what starts on it.
type Options struct {
	// Name tells a package's shared clusters apart (difftest compares two); "" is the default.
	Name string
	// Controllers runs kube-controller-manager's controllers (see cluster.Options); at most
	// one cluster per process can have them.
	Controllers bool
	// UpstreamCollector also runs kube-controller-manager's own garbage collector.
	UpstreamCollector bool
	// DataDir keeps the control plane's data there, across runs (see cluster.Options); ""
	// is a temporary directory.
	DataDir string
	// Logger receives gcscope's lines about the control plane. Nil means Logger(slog.LevelWarn).
	Logger *slog.Logger
	// Setup runs once the control plane is ready, before any test gets it: fixtures, an
	// engine started with Env.GoReady, package variables. Its error stops the cluster and
	// fails every test that asks for it.
	Setup func(ctx context.Context, e *Env) error
}

// Env is a running control plane, admin clients for it, and the goroutines started on it.
type Env struct {
	Cluster *cluster.Cluster
	// Config is the admin configuration: the control plane's own, yours to change.
	Config *rest.Config
	Client kubernetes.Interface
	Meta   metadata.Interface
	Dyn    dynamic.Interface
	Ext    apiextensionsclient.Interface
	Log    *slog.Logger

	ctx      context.Context // cancelled when Stop begins
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	cleanups []func()
	stopOnce sync.Once
}

// Logger writes text lines of at least level to stderr.
func Logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// startTimeout bounds a control plane's start-up and its Setup; keptStartTimeout, that of a
// control plane on a kept data dir, whose apiserver is ready once its watch caches hold
// what the dir holds (a million objects take minutes on two cores).
const (
	startTimeout     = 3 * time.Minute
	keptStartTimeout = 30 * time.Minute
)

// Start boots a control plane with opts and runs opts.Setup on it. The caller stops it.
func Start(opts Options) (*Env, error) {
	timeout := startTimeout
	if opts.DataDir != "" {
		timeout = keptStartTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	log := opts.Logger
	if log == nil {
		log = Logger(slog.LevelWarn)
	}
	c, err := cluster.Start(ctx, cluster.Options{DataDir: opts.DataDir, Controllers: opts.Controllers, UpstreamCollector: opts.UpstreamCollector, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("start embedded control plane: %w", err)
	}
	e := &Env{Cluster: c, Config: c.RESTConfig(), Log: log}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	cfg := c.RESTConfig()
	e.Client = kubernetes.NewForConfigOrDie(cfg)
	e.Meta = metadata.NewForConfigOrDie(cfg)
	e.Dyn = dynamic.NewForConfigOrDie(cfg)
	e.Ext = apiextensionsclient.NewForConfigOrDie(cfg)
	if opts.Setup != nil {
		if err := opts.Setup(ctx, e); err != nil {
			e.Stop()
			return nil, fmt.Errorf("set up the embedded control plane: %w", err)
		}
	}
	return e, nil
}

// NewCluster starts a control plane for t alone, stopped when t ends.
func NewCluster(t testing.TB, opts Options) *Env {
	t.Helper()
	e, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return e
}

// Context is cancelled when the Env stops: for goroutines that Stop need not wait for.
func (e *Env) Context() context.Context { return e.ctx }

// Go runs run in the background until the Env stops: Stop cancels run's context and waits
// for it to return, before it stops the control plane. The channel receives run's result.
func (e *Env) Go(run func(ctx context.Context) error) <-chan error {
	done := make(chan error, 1)
	e.wg.Go(func() { done <- run(e.ctx) })
	return done
}

// GoReady is Go that waits until ready is closed (an engine's Started, say). It fails if run
// returns first, or if ready takes longer than DefaultWait.
func (e *Env) GoReady(ready <-chan struct{}, run func(ctx context.Context) error) error {
	done := e.Go(run)
	select {
	case <-ready:
		return nil
	case err := <-done:
		if err == nil {
			err = errors.New("returned")
		}
		return fmt.Errorf("stopped before it was ready: %w", err)
	case <-time.After(DefaultWait):
		return fmt.Errorf("not ready after %s", DefaultWait)
	}
}

// Cleanup registers f to run when the Env stops, before its goroutines are cancelled; the
// last registered runs first, as with testing.T.Cleanup.
func (e *Env) Cleanup(f func()) { e.cleanups = append(e.cleanups, f) }

// Stop runs the clean-ups, stops the goroutines started with Go, then the control plane.
// Calling it again does nothing.
func (e *Env) Stop() {
	e.stopOnce.Do(func() {
		for _, f := range slices.Backward(e.cleanups) {
			f()
		}
		e.cancel()
		e.wg.Wait()
		e.Cluster.Stop()
	})
}

// shared holds a package's shared control planes by Options.Name.
var shared struct {
	mu   sync.Mutex
	envs map[string]*sharedEnv
}

type sharedEnv struct {
	once sync.Once
	env  *Env
	err  error
}

func sharedSlot(name string) *sharedEnv {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.envs == nil {
		shared.envs = map[string]*sharedEnv{}
	}
	s := shared.envs[name]
	if s == nil {
		s = &sharedEnv{}
		shared.envs[name] = s
	}
	return s
}

func startShared(opts Options) (*Env, error) {
	s := sharedSlot(opts.Name)
	s.once.Do(func() { s.env, s.err = Start(opts) })
	return s.env, s.err
}

// Shared returns the package's control plane named opts.Name, starting it for the first
// test that asks; every call for one name must pass the same options. Main stops it.
func Shared(t testing.TB, opts Options) *Env {
	t.Helper()
	e, err := startShared(opts)
	if err != nil {
		t.Fatalf("test environment %q: %v", opts.Name, err)
	}
	return e
}

// Run starts the shared control planes of start (in order), runs the tests, then stops every
// shared control plane, and returns the exit code. For a TestMain with its own clean-up.
func Run(m *testing.M, start ...Options) int {
	defer stopShared()
	for _, o := range start {
		if _, err := startShared(o); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

// Main is Run for TestMain: it exits with the tests' code.
func Main(m *testing.M, start ...Options) { os.Exit(Run(m, start...)) }

func stopShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	for _, s := range shared.envs {
		if s.env != nil {
			s.env.Stop()
		}
	}
}

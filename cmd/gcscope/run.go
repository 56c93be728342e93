package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gcscope/gcscope/cluster/demo"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/scenario"
	"github.com/gcscope/gcscope/server"
	"github.com/gcscope/gcscope/server/remote"
	"github.com/gcscope/gcscope/server/security"
)

// scenarioPause is how long a played scenario's step stays on screen before the next
// one acts: time to see the objects before they are deleted.
const scenarioPause = time.Second

// controlPlane is the embedded cluster as run needs it (see embedded.go).
type controlPlane interface {
	RESTConfig() *rest.Config
	DataDir() string
	KubeconfigPath() string
	WriteKubeconfig(path string) error
	Failed() <-chan error
	Stop()
}

// run is gcscope from flags to shutdown: listen, connect to (or boot) the cluster, apply the
// demo, serve until ctx is cancelled, then stop everything in reverse order.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "replay" {
		return runReplay(ctx, args[1:], stdout, stderr)
	}
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if cfg.showVersion {
		fmt.Fprintf(stdout, "gcscope %s\n", version)
		return nil
	}
	log := cfg.logger(stderr)

	// Listen first: a port in use or a bad key pair is reported before seconds go into
	// booting a cluster.
	ln, scheme, err := cfg.listener()
	if err != nil {
		return err
	}
	defer ln.Close()
	tokens, err := cfg.authenticator()
	if err != nil {
		return err
	}
	audit := stderr
	if cfg.auditLog != "-" {
		f, err := os.OpenFile(cfg.auditLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("--audit-log: %v", err)
		}
		defer f.Close()
		audit = f
	}

	common := cfg.options(log, tokens, audit)
	common.MaxStreams, common.MaxStreamsPerUser, common.PageFullGraph = cfg.maxStreams, cfg.maxUserStreams, cfg.pageFullGraph
	if len(cfg.remotes) > 0 {
		set, err := remote.NewSet(cfg.remotes, remote.Options{Logger: log.With("component", "remote"), AllowedOrigins: cfg.allowedOrigins})
		if err != nil {
			return err
		}
		probeCtx, stopProbes := context.WithCancel(context.Background())
		defer stopProbes()
		go set.Run(probeCtx)
		common.Remotes = set
	}
	if cfg.hubOnly() {
		// No cluster of its own: the remotes' engines are in their clusters, and with
		// --auth=kubernetes the remotes decide who a user is (each its own cluster's review).
		opts := common
		if cfg.auth == "kubernetes" {
			if opts.SSO, err = singleSignOn(ctx, cfg); err != nil {
				return err
			}
			opts.Auth = opts.Remotes.Door(idTokens(opts.SSO))
		}
		handler := server.New(opts)
		hubCtx, stopHubs := context.WithCancel(context.Background())
		defer stopHubs()
		go handler.Run(hubCtx)
		return serve(ctx, stdout, serving{ln: ln, scheme: scheme, handler: handler, log: log, what: "a hub of remote gcscopes", started: func() error { return nil }})
	}
	if cfg.several() {
		fl, door, err := startFleet(cfg, getenv, log, stdout)
		if err != nil {
			return err
		}
		defer fl.Stop()
		opts := common
		opts.Clusters, opts.Ready = fl, fl.Ready
		if door != nil {
			if opts.SSO, err = singleSignOn(ctx, cfg); err != nil {
				return err
			}
			// Every cluster here reviews each request itself, so a remote may sign a user
			// in too: the contexts' clusters do not take its word for who they are.
			if opts.Remotes != nil {
				door = security.AnyOf{door, opts.Remotes.Door(idTokens(opts.SSO))}
			}
			opts.Auth = door
		}
		handler := server.New(opts)
		hubCtx, stopHubs := context.WithCancel(context.Background())
		defer stopHubs()
		go handler.Run(hubCtx)
		return serve(ctx, stdout, serving{ln: ln, scheme: scheme, handler: handler, log: log, started: func() error {
			for _, line := range accessSummary(cfg, "") {
				fmt.Fprintln(stdout, line)
			}
			return nil
		}})
	}

	start := time.Now()
	var restConfig *rest.Config
	var failed <-chan error
	dataDir := cfg.dataDir  // gcscope's state: the recording, and the embedded cluster's
	name := cfg.kubeContext // the cluster's name in the page and the API
	if cfg.embedded() {
		cp, err := startControlPlane(ctx, cfg, log)
		if err != nil {
			return fmt.Errorf("embedded control plane: %w", err)
		}
		defer cp.Stop()
		restConfig, failed, dataDir = cp.RESTConfig(), cp.Failed(), cp.DataDir()
		name = "embedded"
		kubeconfig := cp.KubeconfigPath()
		if cfg.writeKubeconfig != "" {
			if err := cp.WriteKubeconfig(cfg.writeKubeconfig); err != nil {
				return err
			}
			kubeconfig = cfg.writeKubeconfig
		}
		v, err := serverVersion(restConfig)
		if err != nil {
			return fmt.Errorf("embedded control plane: %w", err)
		}
		fmt.Fprintf(stdout, "embedded Kubernetes %s ready in %s at %s\n", v, time.Since(start).Round(100*time.Millisecond), restConfig.Host)
		fmt.Fprintf(stdout, "kubectl: export KUBECONFIG=%s\n", kubeconfig)
	} else {
		if restConfig, err = externalConfig(cfg, getenv); err != nil {
			return err
		}
		v, err := serverVersion(restConfig)
		if err != nil {
			return fmt.Errorf("cannot reach the cluster at %s: %v; check that it is running and that the kubeconfig and context are the right ones", restConfig.Host, err)
		}
		fmt.Fprintf(stdout, "connected to Kubernetes %s at %s\n", v, restConfig.Host)
		if cfg.inCluster {
			name = "in-cluster"
		} else if name == "" {
			name = currentContext(cfg, getenv)
		}
	}

	parts, err := buildCluster(cfg, restConfig, dataDir, "", log, stdout)
	if err != nil {
		return err
	}
	engine := parts.engine
	restConfig = rest.CopyConfig(restConfig)
	restConfig.QPS, restConfig.Burst = float32(cfg.qps), cfg.burst
	engineCtx, stopEngine := context.WithCancel(context.Background())
	engineDone := make(chan error, 1)
	go func() { engineDone <- engine.Run(engineCtx) }()
	defer func() {
		stopEngine()
		select {
		case <-engineDone:
		case <-time.After(1500 * time.Millisecond):
			log.Warn("garbage collector still stopping; not waiting longer")
		}
	}()
	defer parts.stop() // before the engine stops: the last events are written
	opts := common
	opts.Engine, opts.Kube, opts.Deletions, opts.History, opts.ClusterName = engine, restConfig, parts.deletions, parts.history, name
	if cfg.auth == "kubernetes" {
		// Each user reads what it may list.
		tokens, access, err := security.ClusterReviewers(restConfig)
		if err != nil {
			return err
		}
		opts.Auth, opts.Authorizer = tokens, access
	}
	if opts.SSO, err = singleSignOn(ctx, cfg); err != nil {
		return err
	}
	ready := &readiness{waiting: "garbage collector syncing its monitors"}
	opts.Ready = func() error {
		if err := ready.check(); err != nil {
			return err
		}
		if d := engine.SyncState().Discovery; d != "" {
			return errors.New(d) // the engine monitors nothing yet
		}
		return nil
	}
	// The scenario player creates and deletes objects with the admin credentials at will:
	// only on the embedded cluster, with the engine active (nothing else collects there),
	// and not where each user must act as itself (--auth=kubernetes).
	if cfg.embedded() && cfg.gcMode == gc.ModeActive && cfg.auth != "kubernetes" {
		player, err := scenario.NewPlayer(restConfig, scenario.Options{Engine: engine, Pause: scenarioPause, Logger: log.With("component", "scenario")})
		if err != nil {
			return fmt.Errorf("scenario player: %w", err)
		}
		defer player.Close()
		opts.Scenarios = player
	}
	handler := server.New(opts)
	go handler.Run(engineCtx)

	return serve(ctx, stdout, serving{ln: ln, scheme: scheme, handler: handler, log: log, failed: failed, started: func() error {
		select {
		case <-engine.Started():
			st := engine.SyncState()
			fmt.Fprintf(stdout, "garbage collector (%s, %d workers) monitoring %d resources\n", cfg.gcMode, cfg.workers, len(st.Resources))
		case err := <-engineDone:
			return fmt.Errorf("garbage collector: %w", err)
		case <-ctx.Done():
			return errStopped
		}
		if cfg.demo {
			ready.set("creating demo workloads")
			dstart := time.Now()
			if err := demo.Apply(ctx, restConfig, demo.Options{Logger: log, Observed: func(uid types.UID) bool { _, ok := engine.Node(uid); return ok }}); err != nil {
				if ctx.Err() != nil {
					return errStopped
				}
				log.Warn("demo workloads incomplete; gcscope runs on without them", "err", err)
			} else {
				engine.RefreshDiscovery() // the demo's CRD: monitor its Widgets now, not in 30 s
				fmt.Fprintf(stdout, "demo workloads in namespaces %s (%s)\n", strings.Join(demo.Namespaces, ", "), time.Since(dstart).Round(100*time.Millisecond))
			}
		}
		ready.set("")
		for _, line := range accessSummary(cfg, restConfig.Host) {
			fmt.Fprintln(stdout, line)
		}
		return nil
	}})
}

// currentContext is the kubeconfig's current context, for the cluster's name.
func currentContext(cfg *config, getenv func(string) string) string {
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loadingRules(cfg, getenv), &clientcmd.ConfigOverrides{}).RawConfig()
	if err != nil || raw.CurrentContext == "" {
		return "default"
	}
	return raw.CurrentContext
}

// externalConfig loads the client configuration of an existing cluster.
func externalConfig(cfg *config, getenv func(string) string) (*rest.Config, error) {
	if cfg.inCluster {
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("--in-cluster: %v; run gcscope in a pod with a service account, or use --kubeconfig", err)
		}
		return rc, nil
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: cfg.kubeContext}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loadingRules(cfg, getenv), overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("cannot use %s: %v; check the file and --context, or omit both to use the embedded cluster", kubeconfigName(cfg), oneLine(err))
	}
	return rc, nil
}

// loadingRules find the kubeconfig as kubectl does: --kubeconfig, else $KUBECONFIG, else
// ~/.kube/config.
func loadingRules(cfg *config, getenv func(string) string) *clientcmd.ClientConfigLoadingRules {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.Precedence = []string{clientcmd.RecommendedHomeFile}
	if env := getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		rules.Precedence = filepath.SplitList(env)
	}
	rules.ExplicitPath = cfg.kubeconfig
	return rules
}

// kubeconfigName names the kubeconfig in messages.
func kubeconfigName(cfg *config) string {
	if cfg.kubeconfig != "" {
		return cfg.kubeconfig
	}
	return "the default kubeconfig"
}

// serverVersion asks the apiserver for its version, with a short timeout.
func serverVersion(rc *rest.Config) (string, error) {
	rc = rest.CopyConfig(rc)
	rc.Timeout = 10 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return "", err
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return "", oneLineErr(err)
	}
	return v.GitVersion, nil
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

func oneLineErr(err error) error { return errors.New(oneLine(err)) }

// readiness is what /readyz reports: empty waiting means ready.
type readiness struct {
	mu      sync.Mutex
	waiting string
}

func (r *readiness) set(waiting string) {
	r.mu.Lock()
	r.waiting = waiting
	r.mu.Unlock()
}

func (r *readiness) check() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waiting != "" {
		return errors.New(r.waiting)
	}
	return nil
}

// singleSignOn is --oidc-issuer-url's provider (nil without it).
func singleSignOn(ctx context.Context, cfg *config) (*security.SSO, error) {
	if cfg.oidc.IssuerURL == "" {
		return nil, nil
	}
	sso, err := security.NewSSO(ctx, cfg.oidc)
	if err != nil {
		return nil, fmt.Errorf("--oidc-issuer-url: %w", err)
	}
	return sso, nil
}

// idTokens is sso as a hub's door checks ID tokens (nil without single sign-on).
func idTokens(sso *security.SSO) remote.IDTokens {
	if sso == nil {
		return nil
	}
	return sso
}

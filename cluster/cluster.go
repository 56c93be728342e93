// Package cluster runs an embedded Kubernetes control plane in this process: etcd,
// kube-apiserver and kube-controller-manager's controllers (all but the garbage collector,
// which is gcscope's own), on loopback, with credentials generated into a data dir.
// It knows nothing of garbage collection or of gcscope's server.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options configure an embedded control plane.
type Options struct {
	// DataDir holds etcd's data, the generated credentials and the control plane's logs.
	// Empty means a fresh temporary directory, removed by Stop.
	DataDir string
	// Controllers runs kube-controller-manager's controllers. They can run only once per
	// process, so a process that starts a second cluster must leave them out.
	Controllers bool
	// UpstreamCollector also runs kube-controller-manager's own garbage collector (with
	// Controllers), for gcscope's engine to watch in shadow mode. Otherwise the collector is
	// left out: gcscope's engine is the cluster's collector.
	UpstreamCollector bool
	// Debug also copies the control plane's own logs to stderr.
	Debug bool
	// Logger receives gcscope's lines about the control plane (not the components' logs).
	Logger *slog.Logger
	// OIDC, when its issuer is set, makes the apiserver accept that provider's ID tokens.
	OIDC OIDC
}

// OIDC is an OpenID provider the apiserver trusts (its --oidc-* flags): an ID token of
// the issuer for the client ID is a user's credential, named after its sub claim with
// UsernamePrefix before it.
type OIDC struct {
	IssuerURL, ClientID, CAFile, UsernamePrefix string
}

// Cluster is a running embedded control plane.
type Cluster struct {
	log            *slog.Logger
	dataDir        string
	removeDataDir  bool
	kubeconfigPath string
	config         *rest.Config

	etcd     *embed.Etcd
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	failed   chan error    // a component stopped on its own
	stopping chan struct{} // closed when Stop begins
	stopOnce sync.Once
}

// startTimeout bounds how long Start waits for kube-apiserver to become ready, unless
// Start's ctx has a deadline: a kept data dir with many objects makes the apiserver ready
// only once its watch caches hold them.
const startTimeout = 90 * time.Second

// Start boots etcd and kube-apiserver, waits until the apiserver is ready, writes an admin
// kubeconfig into the data dir and, if asked, starts the controllers. ctx bounds start-up
// only; the cluster runs until Stop.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Cluster{log: log, dataDir: opts.DataDir, failed: make(chan error, 2), stopping: make(chan struct{})}
	if c.dataDir == "" {
		if c.dataDir, err = os.MkdirTemp("", "gcscope-"); err != nil {
			return nil, fmt.Errorf("create a temporary data dir: %w", err)
		}
		c.removeDataDir = true
	} else if c.dataDir, err = filepath.Abs(c.dataDir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if err := os.MkdirAll(filepath.Join(c.dataDir, "logs"), 0o700); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", c.dataDir, err)
	}

	logFile := filepath.Join(c.dataDir, "logs", "controlplane.log")
	if err := routeComponentLogs(logFile, opts.Debug); err != nil {
		return nil, err
	}
	p, err := ensurePKI(filepath.Join(c.dataDir, "pki"))
	if err != nil {
		return nil, err
	}

	// The controller-manager's options must exist before the apiserver registers its flags.
	var cm *controllerManager
	if opts.Controllers {
		if cm, err = newControllerManager(); err != nil {
			return nil, err
		}
	}

	start := time.Now()
	var etcdURL string
	c.etcd, etcdURL, err = startEtcd(ctx, c.dataDir, filepath.Join(c.dataDir, "logs", "etcd.log"), opts.Debug)
	if err != nil {
		return nil, err
	}
	log.Debug("etcd ready", "url", etcdURL, "after", time.Since(start).Round(time.Millisecond))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for kube-apiserver: %w", err)
	}
	s, err := apiserverOptions(p, etcdURL, ln, opts.OIDC)
	if err != nil {
		ln.Close()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.goRun("kube-apiserver", func() error { return runAPIServer(runCtx, s) })

	c.config = &rest.Config{
		Host:            "https://" + ln.Addr().String(),
		BearerToken:     p.adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAFile: p.caCert},
		QPS:             50,
		Burst:           100,
	}
	if err := c.waitReady(ctx, logFile); err != nil {
		return nil, err
	}
	log.Debug("kube-apiserver ready", "url", c.config.Host, "after", time.Since(start).Round(time.Millisecond))

	c.kubeconfigPath = filepath.Join(c.dataDir, "kubeconfig")
	if err := c.WriteKubeconfig(c.kubeconfigPath); err != nil {
		return nil, err
	}
	if cm != nil {
		c.goRun("kube-controller-manager", func() error {
			return cm.run(runCtx, p, c.kubeconfigPath, c.dataDir, opts.UpstreamCollector)
		})
	}
	return c, nil
}

// goRun runs a component until it returns; returning before Stop is a failure.
func (c *Cluster) goRun(name string, run func() error) {
	c.wg.Go(func() {
		err := run()
		if c.cancelled() {
			return
		}
		if err == nil {
			err = errors.New("stopped")
		}
		c.failed <- fmt.Errorf("%s: %w (logs in %s)", name, err, filepath.Join(c.dataDir, "logs"))
	})
}

func (c *Cluster) cancelled() bool {
	select {
	case <-c.stopping:
		return true
	default:
		return false
	}
}

// waitReady polls the apiserver's /readyz until it answers ok, a component fails, or the
// start-up time runs out.
func (c *Cluster) waitReady(ctx context.Context, logFile string) error {
	client, err := rest.HTTPClientFor(c.config)
	if err != nil {
		return err
	}
	wait := startTimeout
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d)
	}
	deadline := time.After(wait)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.config.Host+"/readyz", nil)
		if resp, err := client.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-c.failed:
			return err
		case <-deadline:
			return fmt.Errorf("kube-apiserver was not ready after %s (log: %s)", wait.Round(time.Second), logFile)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// RESTConfig returns a copy of the admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.config) }

// DataDir is where etcd's data, credentials, kubeconfig and logs live.
func (c *Cluster) DataDir() string { return c.dataDir }

// KubeconfigPath is the admin kubeconfig inside the data dir.
func (c *Cluster) KubeconfigPath() string { return c.kubeconfigPath }

// Failed delivers an error if a component stops on its own before Stop.
func (c *Cluster) Failed() <-chan error { return c.failed }

// WriteKubeconfig writes an admin kubeconfig for this cluster to path (mode 0600). The CA
// and token are inlined so the file works on its own, even after the data dir is gone.
func (c *Cluster) WriteKubeconfig(path string) error {
	ca, err := os.ReadFile(c.config.CAFile)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["gcscope"] = &clientcmdapi.Cluster{Server: c.config.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos["gcscope-admin"] = &clientcmdapi.AuthInfo{Token: c.config.BearerToken}
	cfg.Contexts["gcscope"] = &clientcmdapi.Context{Cluster: "gcscope", AuthInfo: "gcscope-admin"}
	cfg.CurrentContext = "gcscope"
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}

// stopGrace bounds how long Stop waits for the components to finish their shutdown.
const stopGrace = 3 * time.Second

// Stop shuts the control plane down: controllers and apiserver first, then etcd, then the
// temporary data dir. It waits at most a few seconds for the components. Calling it again
// does nothing.
func (c *Cluster) Stop() { c.stopOnce.Do(c.stop) }

func (c *Cluster) stop() {
	close(c.stopping)
	if c.cancel != nil {
		c.cancel()
	}
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(stopGrace):
		c.log.Warn("control plane components still stopping; not waiting longer", "after", stopGrace)
	}
	if c.etcd != nil {
		c.etcd.Close()
	}
	if c.removeDataDir {
		os.RemoveAll(c.dataDir)
	}
}

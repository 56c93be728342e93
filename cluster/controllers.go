package cluster

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
)

// garbageCollector is kube-controller-manager's name for its garbage collector. The
// embedded cluster leaves it out unless asked: the collector is gcscope's own engine, and
// running upstream's too would make two collectors race over the same objects.
const garbageCollector = "garbage-collector-controller"

// controllerManager holds kube-controller-manager's options between construction and run.
// The options must be created before kube-apiserver's flags are registered: both register
// the shared component-globals flags and the second registration must come from the
// apiserver's side.
type controllerManager struct {
	opts *options.KubeControllerManagerOptions
}

func newControllerManager() (*controllerManager, error) {
	o, err := options.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager options: %w", err)
	}
	return &controllerManager{opts: o}, nil
}

// run parses the controller-manager's flags, as its command line would, and runs every
// default controller, the garbage collector only if withCollector, until ctx is cancelled.
// It can run only once per process: the controller-manager registers itself in
// process-wide tables (configz).
func (m *controllerManager) run(ctx context.Context, p *pki, kubeconfig, dataDir string, withCollector bool) error {
	all, disabledByDefault, aliases := app.KnownControllers(), app.ControllersDisabledByDefault(), app.ControllerAliases()
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, set := range m.opts.Flags(all, disabledByDefault, aliases).FlagSets {
		fs.AddFlagSet(set)
	}
	controllers := "*"
	if !withCollector {
		controllers += ",-" + garbageCollector
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + controllers,
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--secure-port=0",
		"--service-account-private-key-file=" + p.saKey,
		"--root-ca-file=" + p.caCert,
		"--cluster-signing-cert-file=" + p.caCert,
		"--cluster-signing-key-file=" + p.caKey,
		"--cluster-cidr=10.244.0.0/16",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--controller-shutdown-timeout=3s",
		// Without it the controller-manager creates a directory under /usr/libexec.
		"--flex-volume-plugin-dir=" + filepath.Join(dataDir, "flexvolume"),
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("kube-controller-manager flags: %w", err)
	}
	if err := m.opts.ComponentGlobalsRegistry.Set(); err != nil {
		return fmt.Errorf("kube-controller-manager feature gates: %w", err)
	}
	cfg, err := m.opts.Config(ctx, all, disabledByDefault, aliases)
	if err != nil {
		return fmt.Errorf("kube-controller-manager config: %w", err)
	}
	return app.Run(ctx, cfg.Complete())
}

package cluster

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// serviceCIDR is the embedded cluster's Service range; 10.0.0.1 (its first address) is in the
// serving certificate as the in-cluster address of the apiserver.
const serviceCIDR = "10.0.0.0/16"

// apiserverOptions parses kube-apiserver's own flags, as its command line would, for a
// server on the given loopback listener backed by the given etcd.
func apiserverOptions(p *pki, etcdURL string, ln net.Listener, oidc OIDC) (*options.ServerRunOptions, error) {
	s := options.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, set := range s.Flags().FlagSets {
		fs.AddFlagSet(set)
	}
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--tls-cert-file=" + p.servingCert,
		"--tls-private-key-file=" + p.servingKey,
		"--client-ca-file=" + p.caCert,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.saPub,
		"--service-account-signing-key-file=" + p.saKey,
		"--token-auth-file=" + p.tokenFile,
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=" + serviceCIDR,
		// One apiserver on loopback: no endpoints to reconcile, no priority-and-fairness
		// queues to warm up.
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false",
	}
	if oidc.IssuerURL != "" {
		args = append(args, "--oidc-issuer-url="+oidc.IssuerURL, "--oidc-client-id="+oidc.ClientID,
			"--oidc-username-claim=sub", "--oidc-username-prefix="+oidc.UsernamePrefix)
		if oidc.CAFile != "" {
			args = append(args, "--oidc-ca-file="+oidc.CAFile)
		}
	}
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("kube-apiserver flags: %w", err)
	}
	s.SecureServing.Listener = ln
	s.SecureServing.BindPort = ln.Addr().(*net.TCPAddr).Port
	// Informer names are process-wide: a second apiserver in one process (tests) needs its own.
	name := "kube-apiserver"
	if n := apiservers.Add(1); n > 1 {
		name = fmt.Sprintf("kube-apiserver-%d", n)
	}
	var err error
	if s.InformerName, err = cache.NewInformerName(name); err != nil {
		return nil, err
	}
	return s, nil
}

// apiservers counts the apiservers started in this process.
var apiservers atomic.Int32

// runAPIServer completes and validates the options and serves until ctx is cancelled.
// It returns once the server has stopped (or failed to start).
func runAPIServer(ctx context.Context, s *options.ServerRunOptions) error {
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return fmt.Errorf("kube-apiserver feature gates: %w", err)
	}
	completed, err := s.Complete(ctx)
	if err != nil {
		return fmt.Errorf("kube-apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return fmt.Errorf("kube-apiserver options: %w", utilerrors.NewAggregate(errs))
	}
	// The loopback clients of the apiserver warn themselves about deprecated APIs; hush.
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	return app.Run(ctx, completed)
}

package main

import (
	"context"
	"fmt"
	"path/filepath"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/fleet"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/registry"
)

// startFleet serves several contexts from one dashboard (ui --context A --context B, or
// --all-contexts): each its own engine in shadow mode, the first context's (the current
// one's with --all-contexts) started now and the others' when the page first opens them,
// or all now. It returns the contexts' names, the default first.
func startFleet(o *options, all, startAll bool) (*fleet.Fleet, []string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.Precedence = []string{clientcmd.RecommendedHomeFile}
	if env := o.getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		rules.Precedence = filepath.SplitList(env)
	}
	rules.ExplicitPath = o.kubeconfig
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig: %s", oneLine(err))
	}
	given := o.contexts
	if all {
		given = nil
	}
	names, err := fleet.Contexts(raw, given, "the kubeconfig")
	if err != nil {
		return nil, nil, err
	}
	var members []fleet.Member
	for _, name := range names {
		overrides := &clientcmd.ConfigOverrides{}
		overrides.AuthInfo.Impersonate = o.as
		rc, err := clientcmd.NewNonInteractiveClientConfig(raw, name, overrides, rules).ClientConfig()
		if rc != nil {
			rc.QPS, rc.Burst = clientQPS, clientBurst
			rc.WarningHandler = rest.NoWarnings{}
			rc.UserAgent = "kubectl-gcscope/" + version
		}
		members = append(members, fleet.Member{Name: name, Config: rc, Err: err})
	}
	fl, err := fleet.New(fleet.Options{Members: members, Logger: o.logger(), Build: func(_ context.Context, name string, rc *rest.Config) (*fleet.Built, error) {
		short := rest.CopyConfig(rc)
		short.Timeout = requestTimeout
		dc, err := discovery.NewDiscoveryClientForConfig(short)
		if err != nil {
			return nil, err
		}
		md, err := metadata.NewForConfig(rc)
		if err != nil {
			return nil, err
		}
		engine, err := gc.New(gc.Clients{Metadata: md, Discovery: memory.NewMemCacheClient(dc)}, gc.Options{Mode: gc.ModeShadow, Logger: o.logger().With("context", name)})
		if err != nil {
			return nil, fmt.Errorf("garbage collector: %w", err)
		}
		deletions, err := deletion.New(engine, short)
		if err != nil {
			return nil, err
		}
		return &fleet.Built{Cluster: registry.Cluster{Engine: engine, Kube: rc, Deletions: deletions}, Engine: engine, Stop: func() {}}, nil
	}})
	if err != nil {
		return nil, nil, err
	}
	fl.Start(startAll)
	return fl, names, nil
}

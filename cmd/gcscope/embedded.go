//go:build !noembedded

package main

import (
	"context"
	"log/slog"

	"github.com/gcscope/gcscope/cluster"
)

// startControlPlane boots the embedded etcd, kube-apiserver and controllers.
func startControlPlane(ctx context.Context, cfg *config, log *slog.Logger) (controlPlane, error) {
	c, err := cluster.Start(ctx, cluster.Options{
		DataDir:     cfg.dataDir,
		Controllers: true,
		// The engine in shadow mode beside kube-controller-manager's own collector.
		UpstreamCollector: cfg.embeddedCollector == "upstream",
		Debug:             cfg.logLevel <= slog.LevelDebug,
		Logger:            log,
		// With single sign-on, the playground's apiserver trusts the same provider, so its
		// users are "oidc:" and their sub claim to RBAC.
		OIDC: cluster.OIDC{IssuerURL: cfg.oidc.IssuerURL, ClientID: cfg.oidc.ClientID, CAFile: cfg.oidc.CAFile, UsernamePrefix: "oidc:"},
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

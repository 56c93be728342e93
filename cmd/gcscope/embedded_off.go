//go:build noembedded

package main

import (
	"context"
	"errors"
	"log/slog"
)

// startControlPlane: this build (the slim in-cluster image) has no embedded control plane.
func startControlPlane(context.Context, *config, *slog.Logger) (controlPlane, error) {
	return nil, errors.New("this gcscope was built without it (tag noembedded); pass --kubeconfig, or --in-cluster in a pod")
}

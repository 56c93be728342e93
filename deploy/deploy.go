// Package deploy holds gcscope's plain Kubernetes manifests, rendered from the Helm chart in
// charts/gcscope by a pinned helm run through the Go toolchain (no downloaded binary):
//
//	gcscope.yaml         the chart's defaults: engine in shadow mode, UI and API read-only
//	gcscope-writes.yaml  writes.enabled=true: deletes from the UI made as the signed-in user
//	gcscope-active.yaml  gc.mode=active: the engine collects with its own ServiceAccount
//	gcscope-monitoring.yaml  the monitoring add-ons alone (ServiceMonitor, PrometheusRule,
//	                     Grafana dashboard), to apply beside gcscope.yaml
//
// and testdata/monitoring-*.yaml, other settings of the monitoring add-ons,
// testdata/hub.yaml, hub mode (hub.remotes) with a token file, testdata/hub-sso*.yaml and
// hub-kubernetes.yaml, hub mode without one (single sign-on, or the remotes' tokens), and
// testdata/refused.txt, helm's message for each of the values the chart refuses, for the
// tests.
//
// `make manifests` (or `make generate`, which runs go generate ./...) renders them again;
// CI fails when they differ from what is committed. The test beside them applies them to an
// embedded kube-apiserver and runs gcscope with the ServiceAccount's token.
package deploy

//go:generate go run render.go

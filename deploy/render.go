//go:build ignore

// render lints charts/gcscope and writes the plain manifests of deploy/ from it, with helm
// pinned below and built by the Go toolchain (go run pkg@version builds in its own module
// context: gcscope's go.mod is not touched). Run from deploy/: go generate ./deploy.
package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

const (
	// helm is the pinned helm (the Go module proxy serves it; the first run builds it, about
	// 1.5 minutes on 2 cores, later runs reuse the build cache).
	helm = "helm.sh/helm/v3/cmd/helm@v3.21.4"
	// kubeVersion is what the manifests are rendered and linted for: the embedded
	// apiserver's version, which the test applies them to. (A helm built by go run does not
	// know its default Kubernetes version and would assume v1.20.)
	kubeVersion = "1.37.1"
	chart       = "../charts/gcscope"
	release     = "gcscope"
	namespace   = "gcscope"
)

// monitoringTemplates are the chart's monitoring add-ons (values: monitoring).
var monitoringTemplates = []string{"templates/monitoring-rbac.yaml", "templates/servicemonitor.yaml", "templates/prometheusrule.yaml", "templates/dashboard.yaml"}

// monitoringOn switches every monitoring add-on on.
var monitoringOn = []string{"monitoring.serviceMonitor.enabled=true", "monitoring.prometheusRule.enabled=true", "monitoring.dashboard.enabled=true"}

// variants are the manifests written, each from the chart's defaults plus set; with only,
// just those templates.
var variants = []struct {
	file, what string
	set        []string
	only       []string
	setFile    []string // --set-file, key=path (relative to deploy/)
}{
	{"gcscope.yaml", "The chart's defaults: the engine in shadow mode, the UI and API read-only.", nil, nil, nil},
	{"gcscope-writes.yaml", "writes.enabled=true: deletes from the UI and API are made as the signed-in user (impersonation).", []string{"writes.enabled=true"}, nil, nil},
	{"gcscope-active.yaml", "gc.mode=active: the engine deletes and patches with its own ServiceAccount (only where no other collector runs).", []string{"gc.mode=active"}, nil, nil},
	{"gcscope-monitoring.yaml", "The monitoring add-ons alone, to apply beside gcscope.yaml where the prometheus-operator's CRDs are: a ServiceMonitor (scraping with the token of a ServiceAccount of its own, which may get /metrics), a PrometheusRule (shadow mode's alerts included) and the Grafana dashboard's ConfigMap.",
		monitoringOn, monitoringTemplates, nil},
	// The other ways of the monitoring values, for deploy's tests: Prometheus's own token,
	// alerts linking to the page, active mode, no history, the dashboard elsewhere.
	{"testdata/monitoring-prometheus-token.yaml", "Test data: the monitoring add-ons with Prometheus's own token, an external URL, active mode and no history.",
		append(slices.Clone(monitoringOn),
			"monitoring.serviceMonitor.token=prometheus",
			"monitoring.serviceMonitor.prometheusServiceAccount.name=prometheus-k8s",
			"monitoring.serviceMonitor.prometheusServiceAccount.namespace=monitoring",
			"monitoring.serviceMonitor.tls.caKey=ca.crt",
			"monitoring.serviceMonitor.labels.release=kube-prometheus-stack",
			"monitoring.prometheusRule.externalURL=https://gcscope.example.com/",
			"monitoring.prometheusRule.labels.release=kube-prometheus-stack",
			"monitoring.prometheusRule.stuckDeletionAfter=2h",
			"monitoring.dashboard.namespace=monitoring",
			"monitoring.dashboard.annotations.grafana_folder=Kubernetes",
			"gc.mode=active", "history.enabled=false"),
		monitoringTemplates, nil},
	// Hub mode, for deploy's tests: three remotes, their CAs from a Secret, a ConfigMap and
	// the values (a PEM file), one forwarding ID tokens only.
	{"testdata/hub.yaml", "Test data: hub mode over three remote gcscopes (hub.remotes), users from a token file.",
		[]string{
			"hub.authTokenSecret.name=gcscope-hub-users",
			"hub.remotes[0].name=east", "hub.remotes[0].url=https://gcscope.east.example.com",
			"hub.remotes[0].caSecret.name=east-gcscope-ca",
			"hub.remotes[1].name=west", "hub.remotes[1].url=https://gcscope.west.example.com/gcscope/",
			"hub.remotes[1].caConfigMap.name=west-gcscope-ca", "hub.remotes[1].caConfigMap.key=ca.pem",
			"hub.remotes[1].forward=id-token",
			"hub.remotes[2].name=north", "hub.remotes[2].url=https://gcscope.north.example.com",
			"hub.remotes[2].forward=token",
		}, nil, []string{"hub.remotes[2].ca=testdata/hub-remote-ca.pem"}},
	// Hub mode without a token file, for deploy's tests: single sign-on through an OpenID
	// provider (a confidential client, its CA from a Secret), the remotes deciding who a
	// user is; the same as a public client (its CA from a ConfigMap); and without single
	// sign-on (users paste a token the remotes accept).
	{"testdata/hub-sso.yaml", "Test data: hub mode over two remote gcscopes with single sign-on (hub.singleSignOn), the remotes deciding who a user is.",
		append(slices.Clone(hubSSORemotes),
			"allowedHosts[0]=gcscope.example.com",
			"hub.singleSignOn.issuerURL=https://sso.example.com/realms/platform",
			"hub.singleSignOn.clientID=gcscope-hub",
			"hub.singleSignOn.clientSecret.name=gcscope-hub-oidc", "hub.singleSignOn.clientSecret.key=secret",
			"hub.singleSignOn.caSecret.name=sso-ca",
			"hub.singleSignOn.displayName=Example SSO",
			"hub.singleSignOn.scopes={email,groups,offline_access}",
		), nil, nil},
	{"testdata/hub-sso-public.yaml", "Test data: hub mode with single sign-on as a public client (no client secret), the issuer's CA from a ConfigMap.",
		append(slices.Clone(hubSSORemotes),
			"hub.singleSignOn.issuerURL=https://sso.example.com",
			"hub.singleSignOn.clientID=gcscope-hub",
			"hub.singleSignOn.caConfigMap.name=sso-ca", "hub.singleSignOn.caConfigMap.key=ca.pem",
		), []string{"templates/deployment.yaml"}, nil},
	{"testdata/hub-kubernetes.yaml", "Test data: hub mode without a token file or single sign-on: the remotes decide who a user is (--auth=kubernetes).",
		hubSSORemotes, []string{"templates/deployment.yaml"}, nil},
}

// hubSSORemotes are the remotes of the hub variants without a token file.
var hubSSORemotes = []string{
	"hub.remotes[0].name=east", "hub.remotes[0].url=https://gcscope.east.example.com", "hub.remotes[0].caSecret.name=east-gcscope-ca",
	"hub.remotes[1].name=west", "hub.remotes[1].url=https://gcscope.west.example.com", "hub.remotes[1].forward=id-token",
}

// refusalsFile holds helm's message for each of refusals: values the chart must refuse to
// render (render fails when one renders).
const refusalsFile = "testdata/refused.txt"

var refusals = []struct {
	what string
	set  []string
}{
	{"a hub's token file and single sign-on", append(slices.Clone(hubSSORemotes), "hub.authTokenSecret.name=gcscope-hub-users",
		"hub.singleSignOn.issuerURL=https://sso.example.com", "hub.singleSignOn.clientID=gcscope-hub")},
	{"single sign-on without a client ID", append(slices.Clone(hubSSORemotes), "hub.singleSignOn.issuerURL=https://sso.example.com")},
	{"single sign-on over http", append(slices.Clone(hubSSORemotes), "hub.singleSignOn.issuerURL=http://sso.example.com", "hub.singleSignOn.clientID=gcscope-hub")},
	{"two CAs of the issuer", append(slices.Clone(hubSSORemotes), "hub.singleSignOn.issuerURL=https://sso.example.com", "hub.singleSignOn.clientID=gcscope-hub",
		"hub.singleSignOn.caSecret.name=sso-ca", "hub.singleSignOn.caConfigMap.name=sso-ca")},
	{"a client secret without an issuer", append(slices.Clone(hubSSORemotes), "hub.singleSignOn.clientSecret.name=gcscope-hub-oidc")},
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "deploy/render.go: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	// The chart as `helm install` takes it, with no value set.
	if _, err := helmRun("lint", "--strict", "--quiet", "--kube-version", kubeVersion, chart); err != nil {
		return err
	}
	for _, v := range variants {
		sets := append([]string{"createNamespace=true"}, v.set...)
		args := []string{"lint", "--strict", "--quiet", "--kube-version", kubeVersion, "--namespace", namespace}
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		for _, s := range v.setFile {
			args = append(args, "--set-file", s)
		}
		if _, err := helmRun(append(args, chart)...); err != nil {
			return err
		}
		args = []string{"template", release, chart, "--kube-version", kubeVersion, "--namespace", namespace}
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		for _, s := range v.setFile {
			args = append(args, "--set-file", s)
		}
		for _, t := range v.only {
			args = append(args, "--show-only", t)
		}
		out, err := helmRun(args...)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "# Code generated by deploy/render.go from charts/gcscope (%s); DO NOT EDIT.\n", helm)
		fmt.Fprintf(&b, "# %s\n", v.what)
		only := ""
		for _, t := range v.only {
			only += " --show-only " + t
		}
		for _, s := range v.setFile {
			only += " --set-file " + s
		}
		fmt.Fprintf(&b, "# helm template %s charts/gcscope --namespace %s --set %s%s\n", release, namespace, strings.Join(sets, " --set "), only)
		fmt.Fprintf(&b, "# Change the chart, then run `make manifests`. docs/install.md says how to install.\n")
		b.Write(out)
		if err := writeFile(v.file, b.Bytes()); err != nil {
			return err
		}
	}
	return writeRefusals()
}

// writeRefusals renders each of refusals, which must fail, and writes helm's messages.
func writeRefusals() error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Code generated by deploy/render.go from charts/gcscope (%s); DO NOT EDIT.\n", helm)
	fmt.Fprintf(&b, "# Values the chart refuses to render, each under a \"## what\" line: the command, then helm's message.\n")
	for _, r := range refusals {
		args := []string{"template", release, chart, "--kube-version", kubeVersion, "--namespace", namespace}
		for _, s := range r.set {
			args = append(args, "--set", s)
		}
		out, err := helmRun(args...)
		if err == nil {
			return fmt.Errorf("%s: the chart renders %s; it must refuse them\n%s", r.what, strings.Join(r.set, " "), out)
		}
		fmt.Fprintf(&b, "\n## %s\n# helm template %s charts/gcscope --namespace %s --set %s\n", r.what, release, namespace, strings.Join(r.set, " --set "))
		var msg strings.Builder
		for line := range strings.Lines(err.(*helmError).stderr) {
			if strings.HasPrefix(line, "exit status ") || strings.HasPrefix(line, "Use --debug") { // go run's, helm's advice
				continue
			}
			msg.WriteString(line)
		}
		fmt.Fprintf(&b, "%s\n", strings.TrimSpace(msg.String()))
	}
	return writeFile(refusalsFile, b.Bytes())
}

// helmError is a failed run of helm, with its standard error.
type helmError struct {
	args           []string
	err            error
	stdout, stderr string
}

func (e *helmError) Error() string {
	return fmt.Sprintf("helm %s: %v\n%s%s", strings.Join(e.args, " "), e.err, e.stdout, e.stderr)
}

// helmRun runs the pinned helm and returns its standard output.
func helmRun(args ...string) ([]byte, error) {
	cmd := exec.Command("go", append([]string{"run", helm}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, &helmError{args, err, stdout.String(), stderr.String()}
	}
	return stdout.Bytes(), nil
}

// writeFile replaces name atomically, so a failed run leaves the old file whole.
func writeFile(name string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), filepath.Base(name)+".tmp-")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), name)
}

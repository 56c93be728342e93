package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/internal/testkit"
)

// The chart's monitoring add-ons (values: monitoring): the ServiceMonitor, its RBAC and
// token, the PrometheusRule and the Grafana dashboard, as rendered in
// gcscope-monitoring.yaml and testdata/monitoring-prometheus-token.yaml. They point at the
// chart's own Service, port and TLS Secret; the prometheus-operator's CRDs accept them; a
// scrape made as the ServiceMonitor says gets gcscope's metrics; and every metric the
// alerts and the dashboard ask for is one that gcscope serves.

const (
	// The Prometheus operator's CRDs, as released (testdata/prometheus-operator says which).
	crdDir = "testdata/prometheus-operator/"
	// The chart's dashboard, which the ConfigMap carries.
	dashboardFile = "../charts/gcscope/dashboards/gcscope.json"
	// The page is at /; a ServiceMonitor's path is gcscope's metrics route.
	metricsPath = "/metrics"
)

// monitoringVariant is one rendering of the monitoring add-ons and what it was rendered with.
type monitoringVariant struct {
	file string
	// token: "chart" (the chart's metrics ServiceAccount) or "prometheus" (Prometheus's own).
	token string
	// promSA is the Prometheus ServiceAccount bound to the metrics-reader role (token=prometheus).
	promSA      rbacv1.Subject
	caKey       string
	externalURL string
	// alerts are the PrometheusRule's alerts, by name, with the threshold of the stuck one.
	alerts          []string
	stuckThreshold  string
	dashboardNS     string
	dashboardFolder string
}

var monitoringVariants = []monitoringVariant{
	{
		file: "gcscope-monitoring.yaml", token: "chart", caKey: "tls.crt",
		alerts: []string{"GcscopeCollectorItemRetrying", "GcscopeDeletionStuck", "GcscopeDiscoveryFailing", "GcscopeHistoryRecordingPaused",
			"GcscopeMetricsAbsent", "GcscopeMonitorsFailing", "GcscopeShadowDecisionsDiverged", "GcscopeShadowDecisionsOverdue"},
		stuckThreshold: "1800", dashboardNS: chartNamespace,
	},
	{
		// Active mode has no shadow alerts, and without history no history alert.
		file: "testdata/monitoring-prometheus-token.yaml", token: "prometheus",
		promSA: rbacv1.Subject{Kind: "ServiceAccount", Name: "prometheus-k8s", Namespace: "monitoring"}, caKey: "ca.crt",
		externalURL:    "https://gcscope.example.com/",
		alerts:         []string{"GcscopeCollectorItemRetrying", "GcscopeDeletionStuck", "GcscopeDiscoveryFailing", "GcscopeMetricsAbsent", "GcscopeMonitorsFailing"},
		stuckThreshold: "7200", dashboardNS: "monitoring", dashboardFolder: "Kubernetes",
	},
}

// TestRenderedMonitoring: each rendering of the add-ons points at the chart's Service, its
// https port, gcscope's metrics path, the TLS Secret and a name in the certificate; grants
// get on /metrics to exactly the identity that scrapes; has alerts with a summary, a
// description and a way to the page, on this release's series; and ships the dashboard
// file, well-formed, in a ConfigMap the Grafana sidecar picks up.
func TestRenderedMonitoring(t *testing.T) {
	base := load(t, "gcscope.yaml")
	svc := &corev1.Service{}
	base.typed(t, "Service", svc)
	d := base.deployment(t)
	for _, v := range monitoringVariants {
		t.Run(v.file, func(t *testing.T) {
			m := load(t, v.file)
			for _, o := range m.objects {
				if ns := o.GetNamespace(); o.GetKind() != "ClusterRole" && o.GetKind() != "ClusterRoleBinding" && o.GetKind() != "ConfigMap" && ns != chartNamespace {
					t.Errorf("%s %s in namespace %q, want the release's, %s", o.GetKind(), o.GetName(), ns, chartNamespace)
				}
			}
			checkServiceMonitor(t, v, m, svc, d.Spec.Template.Spec)
			checkMetricsRBAC(t, v, m)
			checkPrometheusRule(t, v, m, svc)
			checkDashboardConfigMap(t, v, m)
		})
	}
}

func checkServiceMonitor(t *testing.T, v monitoringVariant, m *manifest, svc *corev1.Service, pod corev1.PodSpec) {
	t.Helper()
	sms := m.of("ServiceMonitor")
	if len(sms) != 1 {
		t.Fatalf("%d ServiceMonitors, want 1", len(sms))
	}
	sm := sms[0].Object
	if got := sms[0].GetAPIVersion(); got != "monitoring.coreos.com/v1" {
		t.Errorf("ServiceMonitor apiVersion %s, want monitoring.coreos.com/v1", got)
	}
	// It selects the chart's Service, in the release's namespace.
	sel, _, _ := unstructured.NestedStringMap(sm, "spec", "selector", "matchLabels")
	if len(sel) == 0 {
		t.Error("the ServiceMonitor selects every Service (no matchLabels)")
	}
	for k, val := range sel {
		if svc.Labels[k] != val {
			t.Errorf("the ServiceMonitor selects %s=%s, which Service %s does not have (%v)", k, val, svc.Name, svc.Labels)
		}
	}
	if names, _, _ := unstructured.NestedStringSlice(sm, "spec", "namespaceSelector", "matchNames"); !slices.Equal(names, []string{svc.Namespace}) {
		t.Errorf("the ServiceMonitor looks in namespaces %v, want [%s]", names, svc.Namespace)
	}
	eps, _, _ := unstructured.NestedSlice(sm, "spec", "endpoints")
	if len(eps) != 1 {
		t.Fatalf("%d endpoints, want 1", len(eps))
	}
	ep := eps[0].(map[string]any)
	str := func(path ...string) string { s, _, _ := unstructured.NestedString(ep, path...); return s }
	// Its port is the Service's https port, which leads to the pod's https port.
	var port *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Name == str("port") {
			port = &svc.Spec.Ports[i]
		}
	}
	if port == nil {
		t.Fatalf("the endpoint's port %q is none of Service %s's ports %+v", str("port"), svc.Name, svc.Spec.Ports)
	}
	if port.TargetPort.String() != "https" || pod.Containers[0].Ports[0].Name != "https" {
		t.Errorf("Service port %s leads to %s, want the container's https port", port.Name, port.TargetPort.String())
	}
	if str("path") != metricsPath || str("scheme") != "https" {
		t.Errorf("the endpoint scrapes %s://…%s, want https and %s", str("scheme"), str("path"), metricsPath)
	}
	// gcscope's certificate is checked against the chart's TLS Secret, for a name gcscope
	// answers to.
	var tlsSecret string
	for _, vol := range pod.Volumes {
		if vol.Secret != nil {
			tlsSecret = vol.Secret.SecretName
		}
	}
	if skip, _, _ := unstructured.NestedBool(ep, "tlsConfig", "insecureSkipVerify"); skip {
		t.Error("the ServiceMonitor does not check gcscope's certificate")
	}
	if str("tlsConfig", "ca", "secret", "name") != tlsSecret || str("tlsConfig", "ca", "secret", "key") != v.caKey {
		t.Errorf("the CA is Secret %s key %s, want the pod's TLS Secret %s key %s", str("tlsConfig", "ca", "secret", "name"), str("tlsConfig", "ca", "secret", "key"), tlsSecret, v.caKey)
	}
	serverName := str("tlsConfig", "serverName")
	if want := svc.Name + "." + svc.Namespace + ".svc"; serverName != want {
		t.Errorf("serverName %q, want %q", serverName, want)
	}
	var allowed string
	for _, a := range pod.Containers[0].Args {
		if h, ok := strings.CutPrefix(a, "--allowed-hosts="); ok {
			allowed = h
		}
	}
	if !slices.Contains(strings.Split(allowed, ","), serverName) {
		t.Errorf("serverName %q is not among the hosts gcscope answers to (%s)", serverName, allowed)
	}
	// The token it bears.
	switch v.token {
	case "chart":
		if str("authorization", "type") != "Bearer" || str("authorization", "credentials", "key") != "token" {
			t.Errorf("authorization %v, want a Bearer token from the key token of a Secret", ep["authorization"])
		}
		secret := str("authorization", "credentials", "name")
		var found bool
		for _, o := range m.of("Secret") {
			if o.GetName() == secret {
				found = true
				typ, _, _ := unstructured.NestedString(o.Object, "type")
				if typ != string(corev1.SecretTypeServiceAccountToken) || o.GetAnnotations()[corev1.ServiceAccountNameKey] != chartSA+"-metrics" {
					t.Errorf("Secret %s: type %s for %q, want a ServiceAccount token of %s-metrics", secret, typ, o.GetAnnotations()[corev1.ServiceAccountNameKey], chartSA)
				}
			}
		}
		if !found {
			t.Errorf("the token's Secret %s is not in the manifest", secret)
		}
		if str("bearerTokenFile") != "" {
			t.Error("both a token Secret and a token file")
		}
	case "prometheus":
		if str("bearerTokenFile") != "/var/run/secrets/kubernetes.io/serviceaccount/token" || ep["authorization"] != nil {
			t.Errorf("bearerTokenFile %q, authorization %v: want Prometheus's own token file alone", str("bearerTokenFile"), ep["authorization"])
		}
		if len(m.of("Secret")) != 0 || len(m.of("ServiceAccount")) != 0 {
			t.Error("with Prometheus's own token the chart makes no ServiceAccount or Secret for it")
		}
	}
}

// checkMetricsRBAC: one ClusterRole that grants get on /metrics and nothing else, bound to
// the identity that scrapes.
func checkMetricsRBAC(t *testing.T, v monitoringVariant, m *manifest) {
	t.Helper()
	if got := m.grants(t); !slices.Equal(got, []string{"/metrics:get"}) {
		t.Errorf("the monitoring ClusterRoles grant %v, want exactly get on /metrics", got)
	}
	roles := m.clusterRoles(t)
	bindings := m.of("ClusterRoleBinding")
	if len(roles) != 1 || len(bindings) != 1 {
		t.Fatalf("%d ClusterRoles and %d bindings, want one each", len(roles), len(bindings))
	}
	crb := &rbacv1.ClusterRoleBinding{}
	js, _ := bindings[0].MarshalJSON()
	if err := json.Unmarshal(js, crb); err != nil {
		t.Fatal(err)
	}
	want := v.promSA
	if v.token == "chart" {
		want = rbacv1.Subject{Kind: "ServiceAccount", Name: chartSA + "-metrics", Namespace: chartNamespace}
	}
	if roles[crb.RoleRef.Name] == nil || !slices.Equal(crb.Subjects, []rbacv1.Subject{want}) {
		t.Errorf("ClusterRoleBinding %s binds %s to %+v, want the metrics ClusterRole to %+v", crb.Name, crb.RoleRef.Name, crb.Subjects, want)
	}
}

// alertRule is one rule of the PrometheusRule.
type alertRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func prometheusRules(t *testing.T, m *manifest) []alertRule {
	t.Helper()
	prs := m.of("PrometheusRule")
	if len(prs) != 1 {
		t.Fatalf("%d PrometheusRules, want 1", len(prs))
	}
	var spec struct {
		Groups []struct {
			Name  string      `json:"name"`
			Rules []alertRule `json:"rules"`
		} `json:"groups"`
	}
	js, _ := json.Marshal(prs[0].Object["spec"])
	if err := json.Unmarshal(js, &spec); err != nil {
		t.Fatal(err)
	}
	var rules []alertRule
	for _, g := range spec.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules
}

// selectors are the label matchers of a PromQL expression ({...}), strings kept.
var selectors = regexp.MustCompile(`\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}`)

func checkPrometheusRule(t *testing.T, v monitoringVariant, m *manifest, svc *corev1.Service) {
	t.Helper()
	rules := prometheusRules(t, m)
	var names []string
	// Each alert selects this release's series: the ServiceMonitor makes the job label the
	// Service's name.
	scope := []string{fmt.Sprintf(`job=%q`, svc.Name), fmt.Sprintf(`namespace=%q`, svc.Namespace)}
	for _, r := range rules {
		names = append(names, r.Alert)
		if r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("alert %q: want an expression, a severity, a summary and a description: %+v", r.Alert, r)
		}
		// The stuck and the recording alerts open the page at their tab (?tab=).
		tab := map[string]string{"GcscopeDeletionStuck": "?tab=stuck", "GcscopeHistoryRecordingPaused": "?tab=history"}[r.Alert]
		switch {
		case v.externalURL != "":
			if r.Annotations["runbook_url"] != v.externalURL+tab {
				t.Errorf("alert %s: runbook_url %q, want the page at %s", r.Alert, r.Annotations["runbook_url"], v.externalURL+tab)
			}
		case !strings.Contains(r.Annotations["runbook"], "kubectl -n "+svc.Namespace):
			t.Errorf("alert %s: without an external URL, want a runbook saying how to reach gcscope, not %q", r.Alert, r.Annotations["runbook"])
		}
		sels := selectors.FindAllString(r.Expr, -1)
		if len(sels) == 0 {
			t.Errorf("alert %s: %s selects no series", r.Alert, r.Expr)
		}
		for _, s := range sels {
			for _, want := range scope {
				if !strings.Contains(s, want) {
					t.Errorf("alert %s: selector %s lacks %s (another release's gcscope would fire it)", r.Alert, s, want)
				}
			}
		}
		if len(promqlMetricNames(r.Expr)) == 0 {
			t.Errorf("alert %s: no metric in %s", r.Alert, r.Expr)
		}
		if r.Alert == "GcscopeDeletionStuck" && !strings.HasSuffix(r.Expr, "> "+v.stuckThreshold) {
			t.Errorf("alert %s: %s, want the threshold %s s", r.Alert, r.Expr, v.stuckThreshold)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, v.alerts) {
		t.Errorf("alerts %v, want %v", names, v.alerts)
	}
}

// installMonitoringCRDs installs the Prometheus operator's ServiceMonitor and
// PrometheusRule CRDs and waits until the apiserver serves them.
func installMonitoringCRDs(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	c := admin(t)
	for _, f := range []string{"monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml"} {
		for _, crd := range load(t, crdDir+f).objects {
			if err := c.apply(ctx, crd, false); err != nil {
				t.Fatal(err)
			}
			testkit.Eventually(t, "CRD "+crd.GetName()+" established", func() bool {
				got, err := c.dyn.Resource(crdResource).Get(ctx, crd.GetName(), metav1.GetOptions{})
				if err != nil {
					return false
				}
				conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
				for _, cond := range conds {
					cm, _ := cond.(map[string]any)
					if cm["type"] == "Established" && cm["status"] == "True" {
						return true
					}
				}
				return false
			})
		}
	}
	testkit.Eventually(t, "discovery serves ServiceMonitor and PrometheusRule", func() bool {
		mapper := admin(t).mapper
		for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
			if _, err := mapper.RESTMapping(schema.GroupKind{Group: "monitoring.coreos.com", Kind: kind}, "v1"); err != nil {
				return false
			}
		}
		return true
	})
}

// applyStrict applies o with server-side apply and strict field validation: a field the
// object's schema does not know is an error, not a field silently dropped.
func (c *clients) applyStrict(ctx context.Context, o *unstructured.Unstructured, dryRun bool) error {
	gvk := o.GroupVersionKind()
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
	}
	body, err := o.MarshalJSON()
	if err != nil {
		return err
	}
	opts := metav1.PatchOptions{FieldManager: "gcscope-deploy-test", Force: ptr.To(true), FieldValidation: "Strict"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var ri dynamic.ResourceInterface = c.dyn.Resource(mapping.Resource)
	if ns := o.GetNamespace(); ns != "" {
		ri = c.dyn.Resource(mapping.Resource).Namespace(ns)
	}
	if _, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, body, opts); err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", gvk.Kind, o.GetNamespace(), o.GetName(), err)
	}
	return nil
}

// TestMonitoringDryRun: with the Prometheus operator's CRDs installed, the apiserver accepts
// every object of each rendering of the add-ons (schema validation, strict: no unknown
// field), with no warning.
func TestMonitoringDryRun(t *testing.T) {
	installMonitoringCRDs(t)
	ctx := context.Background()
	w := &warnings{}
	cfg := kube.RESTConfig()
	cfg.WarningHandler = w
	c := newClients(t, cfg)
	for _, ns := range []string{chartNamespace, "monitoring"} {
		o := &unstructured.Unstructured{}
		o.SetAPIVersion("v1")
		o.SetKind("Namespace")
		o.SetName(ns)
		if err := c.apply(ctx, o, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range monitoringVariants {
		t.Run(v.file, func(t *testing.T) {
			kinds := map[string]int{}
			for _, o := range load(t, v.file).objects {
				if err := c.applyStrict(ctx, o, true); err != nil {
					t.Error(err)
				}
				kinds[o.GetKind()]++
			}
			for _, k := range []string{"ServiceMonitor", "PrometheusRule", "ConfigMap", "ClusterRole", "ClusterRoleBinding"} {
				if kinds[k] != 1 {
					t.Errorf("%d objects of kind %s, want 1", kinds[k], k)
				}
			}
		})
	}
	// The CRDs check what they hold: a ServiceMonitor with a field they do not know is
	// refused (so the dry run above is not a formality).
	sm := load(t, "gcscope-monitoring.yaml").of("ServiceMonitor")[0].DeepCopy()
	unstructured.SetNestedField(sm.Object, "yes", "spec", "scrapeEverything")
	if err := c.applyStrict(ctx, sm, true); err == nil || !strings.Contains(err.Error(), "scrapeEverything") {
		t.Errorf("a ServiceMonitor with an unknown field: %v, want it refused", err)
	}
	if len(w.list) > 0 {
		t.Errorf("the apiserver warned: %q", w.list)
	}
}

// ---- scraping gcscope as the ServiceMonitor says ------------------------------------------

// TestMetricsAsTheServiceMonitorScrapes runs gcscope as the chart does, installs the
// monitoring RBAC, scrapes /metrics as the ServiceMonitor describes (path, scheme, the
// certificate checked for its serverName, the metrics ServiceAccount's token), and checks
// that every metric the alerts and the dashboard ask for is among what gcscope serves. A
// user without the ClusterRole is refused.
func TestMetricsAsTheServiceMonitorScrapes(t *testing.T) {
	ctx := context.Background()
	m := load(t, "gcscope.yaml")
	mon := load(t, "gcscope-monitoring.yaml")
	installRBAC(t, m)
	t.Cleanup(func() { installRBAC(t, m) }) // drops the metrics-reader ClusterRole and binding
	c := admin(t)
	var metricsSA string
	for _, o := range mon.objects {
		switch o.GetKind() {
		case "ServiceAccount":
			metricsSA = o.GetName()
			fallthrough
		case "ClusterRole", "ClusterRoleBinding":
			if err := c.apply(ctx, o, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The token the cluster's token controller would write into the ServiceMonitor's Secret
	// (no controller-manager runs here): the ServiceAccount's, through the TokenRequest API.
	scrapeToken := token(t, chartNamespace, metricsSA)

	const ns = "monitoring-test"
	scene(t, ns)
	viewer := user(t, ns, "viewer", "get", "list", "watch")
	p := startGcscope(t, m, token(t, chartNamespace, chartSA))
	p.waitReady(t, m)
	// Wait for the engine to have acted (a shadow delete of the ConfigMap whose owner never
	// existed), so that its action counters have series.
	testkit.Eventually(t, "a shadow delete of lonely", func() bool {
		_, ok := p.queues(t, viewer).action("delete", ns, "lonely")
		return ok
	})

	ep := mon.of("ServiceMonitor")[0].Object["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)
	tlsConf := p.client.Transport.(*http.Transport).TLSClientConfig.Clone()
	tlsConf.ServerName, _, _ = unstructured.NestedString(ep, "tlsConfig", "serverName") // the certificate must hold it
	scraper := &http.Client{Timeout: p.client.Timeout, Transport: &http.Transport{TLSClientConfig: tlsConf}}
	scrape := func(bearer string) (int, []byte) {
		u := strings.Replace(p.base, "https://", ep["scheme"].(string)+"://", 1) + ep["path"].(string)
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := scraper.Do(req)
		if err != nil {
			t.Fatalf("scrape %s: %v", u, err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.Bytes()
	}
	if code, body := scrape(""); code != http.StatusUnauthorized {
		t.Errorf("a scrape without a token: %d %.200s, want 401", code, body)
	}
	if code, body := scrape(viewer); code != http.StatusForbidden {
		t.Errorf("a scrape as a user without the metrics-reader role: %d %.200s, want 403", code, body)
	}
	code, body := scrape(scrapeToken)
	if code != http.StatusOK {
		t.Fatalf("the ServiceMonitor's scrape: %d %.300s", code, body)
	}
	served := exposedNames(body)
	if len(served) < 30 {
		t.Fatalf("gcscope serves %d series names:\n%.2000s", len(served), body)
	}

	// Every metric of every alert (each rendering) and of the dashboard is served.
	asked := map[string][]string{} // metric -> where
	for _, v := range monitoringVariants {
		for _, r := range prometheusRules(t, load(t, v.file)) {
			for _, n := range promqlMetricNames(r.Expr) {
				asked[n] = append(asked[n], "alert "+r.Alert)
			}
		}
	}
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	queries := checkDashboard(t, raw)
	for _, q := range queries {
		if sel, ok := labelValuesSelector(q); ok {
			q = sel
		}
		names := promqlMetricNames(q)
		if len(names) == 0 {
			t.Errorf("dashboard query %s names no metric", q)
		}
		for _, n := range names {
			asked[n] = append(asked[n], "dashboard")
		}
	}
	if len(asked) < 25 {
		t.Errorf("the alerts and the dashboard ask for %d metrics: the parsing missed some", len(asked))
	}
	for n, where := range asked {
		if !served[n] {
			t.Errorf("%s (%s) is not among the metrics gcscope serves", n, strings.Join(slices.Compact(where), ", "))
		}
	}
}

package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
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

func checkDashboardConfigMap(t *testing.T, v monitoringVariant, m *manifest) {
	t.Helper()
	cms := m.of("ConfigMap")
	if len(cms) != 1 {
		t.Fatalf("%d ConfigMaps, want the dashboard's", len(cms))
	}
	cm := cms[0]
	if cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("the dashboard's ConfigMap has labels %v, want grafana_dashboard: \"1\" (the Grafana sidecar's)", cm.GetLabels())
	}
	if cm.GetNamespace() != v.dashboardNS || cm.GetAnnotations()["grafana_folder"] != v.dashboardFolder {
		t.Errorf("the dashboard's ConfigMap is in %q with folder %q, want %q and %q", cm.GetNamespace(), cm.GetAnnotations()["grafana_folder"], v.dashboardNS, v.dashboardFolder)
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	if len(data) != 1 || data["gcscope.json"] == "" {
		t.Fatalf("the ConfigMap's data has keys %v, want gcscope.json alone", slices.Sorted(maps.Keys(data)))
	}
	file, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(data["gcscope.json"]) != strings.TrimSpace(string(file)) {
		t.Errorf("the ConfigMap's gcscope.json is not %s", dashboardFile)
	}
	checkDashboard(t, []byte(data["gcscope.json"]))
}

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *datasourceRef  `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int            `json:"id"`
		Type       string         `json:"type"`
		Title      string         `json:"title"`
		Datasource *datasourceRef `json:"datasource"`
		GridPos    *struct {
			H, W, X, Y int
		} `json:"gridPos"`
		Targets []struct {
			Expr       string         `json:"expr"`
			RefID      string         `json:"refId"`
			Datasource *datasourceRef `json:"datasource"`
		} `json:"targets"`
	} `json:"panels"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// promDatasource is the dashboard's data source: its variable, which the user picks.
var promDatasource = datasourceRef{Type: "prometheus", UID: "${datasource}"}

// checkDashboard: valid JSON with a schema version; a datasource variable; panels with
// unique ids, a place on the 24-column grid that no other panel takes, the Prometheus
// data source, and targets whose expressions select gcscope's namespace and job. It
// returns every query (the variables' and the panels').
func checkDashboard(t *testing.T, raw []byte) (queries []string) {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("dashboard uid %q, title %q, schemaVersion %d: want a uid, a title and schemaVersion ≥ 36", d.UID, d.Title, d.SchemaVersion)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		switch v.Type {
		case "datasource":
			if v.Name != "datasource" || string(v.Query) != `"prometheus"` {
				t.Errorf("variable %s: a %s data source, want the datasource variable for prometheus", v.Name, v.Query)
			}
		case "query":
			var q struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &q); err != nil || q.Query == "" || v.Datasource == nil || *v.Datasource != promDatasource {
				t.Errorf("variable %s: query %s on %+v, want a query on %+v", v.Name, v.Query, v.Datasource, promDatasource)
			}
			queries = append(queries, q.Query)
		}
	}
	for _, v := range []string{"datasource", "namespace", "job"} {
		if !vars[v] {
			t.Errorf("the dashboard has no variable %s", v)
		}
	}
	if len(d.Panels) == 0 {
		t.Fatal("the dashboard has no panels")
	}
	ids := map[int]string{}
	taken := map[[2]int]string{} // grid cells
	for _, p := range d.Panels {
		name := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if p.ID <= 0 || ids[p.ID] != "" {
			t.Errorf("%s: its id is not positive or is %s's too", name, ids[p.ID])
		}
		ids[p.ID] = p.Title
		if p.Type == "" || p.Title == "" {
			t.Errorf("%s: want a type and a title", name)
		}
		if p.Datasource == nil || *p.Datasource != promDatasource {
			t.Errorf("%s: datasource %+v, want %+v", name, p.Datasource, promDatasource)
		}
		if g := p.GridPos; g == nil || g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			t.Errorf("%s: gridPos %+v, want one inside the 24-column grid", name, p.GridPos)
		} else {
			for x := g.X; x < g.X+g.W; x++ {
				for y := g.Y; y < g.Y+g.H; y++ {
					if other := taken[[2]int{x, y}]; other != "" {
						t.Errorf("%s overlaps %s at (%d, %d)", name, other, x, y)
					}
					taken[[2]int{x, y}] = name
				}
			}
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s has no targets", name)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" || refs[tg.RefID] || tg.Datasource == nil || *tg.Datasource != promDatasource {
				t.Errorf("%s: target %+v: want an expression, a refId of its own and the data source", name, tg)
			}
			refs[tg.RefID] = true
			sels := selectors.FindAllString(tg.Expr, -1)
			if len(sels) == 0 {
				t.Errorf("%s: %s selects no series", name, tg.Expr)
			}
			for _, s := range sels {
				if !strings.Contains(s, `namespace="$namespace"`) || !strings.Contains(s, `job="$job"`) {
					t.Errorf("%s: selector %s lacks namespace=\"$namespace\" and job=\"$job\"", name, s)
				}
			}
			queries = append(queries, tg.Expr)
		}
	}
	return queries
}

// ---- the CRDs and a server-side dry run ------------------------------------------------

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

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

// exposedNames are the sample names of a Prometheus text exposition (a histogram's
// _bucket, _sum and _count each).
func exposedNames(body []byte) map[string]bool {
	out := map[string]bool{}
	s := bufio.NewScanner(bytes.NewReader(body))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			out[line[:i]] = true
		}
	}
	return out
}

var (
	stringLit   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	braces      = regexp.MustCompile(`\{[^{}]*\}`)
	brackets    = regexp.MustCompile(`\[[^\[\]]*\]`)
	grouping    = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	identifier  = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)
	// promqlWords are PromQL's keywords, which look like metric names.
	promqlWords = map[string]bool{"and": true, "or": true, "unless": true, "by": true, "without": true, "on": true, "ignoring": true,
		"group_left": true, "group_right": true, "offset": true, "bool": true, "inf": true, "nan": true, "atan2": true}
)

// promqlMetricNames returns the metric names a PromQL expression reads: the identifiers
// that are not functions (followed by "("), keywords, label names (inside {} or a
// grouping clause), durations or Grafana variables ($name).
func promqlMetricNames(expr string) []string {
	e := stringLit.ReplaceAllString(expr, `""`)
	e = braces.ReplaceAllString(e, " ")
	e = brackets.ReplaceAllString(e, " ")
	e = grouping.ReplaceAllString(e, " ")
	var names []string
	for _, loc := range identifier.FindAllStringIndex(e, -1) {
		word := e[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsAny(e[loc[0]-1:loc[0]], "$0123456789.") {
			continue // a variable, a number's exponent or a duration's unit
		}
		if next := strings.TrimLeft(e[loc[1]:], " \t\n"); strings.HasPrefix(next, "(") || promqlWords[strings.ToLower(word)] {
			continue
		}
		if !slices.Contains(names, word) {
			names = append(names, word)
		}
	}
	return names
}

// labelValuesSelector is the series selector of a Grafana label_values(selector, label)
// query.
func labelValuesSelector(q string) (string, bool) {
	m := labelValues.FindStringSubmatch(q)
	if m == nil {
		return "", false
	}
	return m[1], true
}

func TestPromQLMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum by (le, name) (rate(workqueue_queue_duration_seconds_bucket{job="g", name=~"a|b"}[$__rate_interval]))`: {"workqueue_queue_duration_seconds_bucket"},
		`max by (namespace, job) (a_total{x="y"}) > 0 or on (job) b == 0 unless absent(c{d="e"})`:                   {"a_total", "b", "c"},
		`sum(increase(d{outcome="diverged"}[1h])) / sum(e offset 5m) > 1e3`:                                         {"d", "e"},
		`histogram_quantile(0.99, sum by (le) (rate(f_bucket[5m])))`:                                                {"f_bucket"},
	} {
		if got := promqlMetricNames(expr); !slices.Equal(got, want) {
			t.Errorf("promqlMetricNames(%s) = %v, want %v", expr, got, want)
		}
	}
	if sel, ok := labelValuesSelector(`label_values(gcscope_gc_graph_nodes{namespace="$namespace"}, job)`); !ok || !slices.Equal(promqlMetricNames(sel), []string{"gcscope_gc_graph_nodes"}) {
		t.Errorf("label_values: %q %v", sel, ok)
	}
}

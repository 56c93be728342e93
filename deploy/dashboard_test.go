package deploy_test

// The chart's Grafana dashboard: its ConfigMap and the queries of its panels.

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

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

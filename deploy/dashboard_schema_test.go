package deploy_test

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	grafana "github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// corePanels are the panel types Grafana ships that the dashboard may use; a type out of
// this list (a typo) would be an empty box in Grafana.
var corePanels = map[string]bool{"stat": true, "timeseries": true, "table": true, "bargauge": true, "gauge": true, "text": true, "row": true}

// TestDashboardMatchesGrafanasSchema reads the dashboard as Grafana's own schema has it
// (the foundation SDK's types, generated from Grafana's dashboard and panel schemas, read
// strictly: every required field there, no field the schema does not know), then checks
// the schema's constraints.
func TestDashboardMatchesGrafanasSchema(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	plugins.RegisterDefaultPlugins() // each panel's options and each query read by its plugin's schema
	var d grafana.Dashboard
	if err := d.UnmarshalJSONStrict(raw); failed(err) {
		t.Errorf("%s does not match Grafana's dashboard schema:\n%v", dashboardFile, err)
	}
	if err := d.Validate(); failed(err) {
		t.Errorf("%s breaks a constraint of Grafana's dashboard schema:\n%v", dashboardFile, err)
	}
	// The schema takes any panel type (a plugin's); the dashboard uses Grafana's own.
	var ours dashboard
	if err := json.Unmarshal(raw, &ours); err != nil {
		t.Fatal(err)
	}
	for _, p := range ours.Panels {
		if !corePanels[p.Type] {
			t.Errorf("panel %d %q has type %q, not one of Grafana's core panels", p.ID, p.Title, p.Type)
		}
	}
}

// failed reports whether err is an error: the SDK answers an empty error list for none.
func failed(err error) bool {
	var errs cog.BuildErrors
	if errors.As(err, &errs) {
		return len(errs) > 0
	}
	return err != nil
}

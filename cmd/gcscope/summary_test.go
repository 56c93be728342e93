package main

import (
	"strings"
	"testing"

	"github.com/gcscope/gcscope/gc"
)

// TestAccessSummarySaysWhatWritesDo: the lines gcscope prints as it starts name who may
// use it and what a delete from the page does, in each mode (a trial set up a shared
// install in shadow mode and was never told its deletes were real).
func TestAccessSummarySaysWhatWritesDo(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       config
		want, not []string
	}{
		{"embedded, loopback", config{gcMode: gc.ModeActive}, []string{"no authentication (loopback only)"}, []string{"shadow", "active mode", "read-only:"}},
		{"shared, shadow", config{kubeconfig: "kc", gcMode: gc.ModeShadow, auth: "kubernetes"},
			[]string{"deletes as itself", "shadow mode: the engine writes nothing, but deletes from the page and the API are real"}, []string{"read-only:", "active mode"}},
		{"shared, shadow, read-only", config{kubeconfig: "kc", gcMode: gc.ModeShadow, serveFlags: serveFlags{authTokenFile: "/etc/tokens", readOnly: true}},
			[]string{"tokens from /etc/tokens", "read-only: the page and the API refuse every delete"}, []string{"shadow mode", "active mode"}},
		{"real cluster, active", config{kubeconfig: "kc", gcMode: gc.ModeActive, auth: "kubernetes"},
			[]string{"active mode: the engine deletes on https://example:6443", "both act"}, []string{"shadow"}},
	} {
		got := strings.Join(accessSummary(&tc.cfg, "https://example:6443"), "\n")
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q does not say %q", tc.name, got, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: %q says %q", tc.name, got, n)
			}
		}
	}
}

package main

import (
	"fmt"

	"github.com/gcscope/gcscope/gc"
)

// accessSummary says, as gcscope starts, who may use it and what its writes do: an
// operator setting up a shared install should not have to read the flags back to know
// whether the page can delete, and as whom.
func accessSummary(cfg *config, clusterHost string) []string {
	var who string
	switch {
	case cfg.auth == "kubernetes":
		who = "access: bearer tokens the cluster accepts; each user reads what its RBAC lets it list and deletes as itself"
	case cfg.authTokenFile != "":
		who = "access: bearer tokens from " + cfg.authTokenFile + "; every holder reads everything and deletes with gcscope's credentials"
	default:
		who = "access: no authentication (loopback only); deletes use gcscope's credentials"
	}
	lines := []string{who}
	switch {
	case cfg.readOnly:
		lines = append(lines, "read-only: the page and the API refuse every delete (dry runs still predict)")
	case cfg.gcMode == gc.ModeShadow && !cfg.embedded():
		lines = append(lines, "shadow mode: the engine writes nothing, but deletes from the page and the API are real, and the cluster's own collector cascades them (--read-only refuses them)")
	}
	if cfg.gcMode == gc.ModeActive && !cfg.embedded() {
		lines = append(lines, fmt.Sprintf("active mode: the engine deletes on %s; if kube-controller-manager's garbage collector runs there too, both act on every object", clusterHost))
	}
	return lines
}

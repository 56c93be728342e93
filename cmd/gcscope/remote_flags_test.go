package main

import (
	"io"
	"strings"
	"testing"
)

// TestRemoteFlags: --remote alone makes a hub (no embedded cluster); what would send a
// user's credential somewhere unintended, or cannot authenticate, is refused at start-up.
func TestRemoteFlags(t *testing.T) {
	c, err := parseFlags([]string{"--remote=east=https://gcscope.east.example.com,forward=id-token", "--remote=west=http://127.0.0.1:9000", "--auth-token-file=/dev/null"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !c.hubOnly() || c.embedded() || len(c.remotes) != 2 || c.remotes[0].Forward != "id-token" || c.remotes[1].URL != "http://127.0.0.1:9000" {
		t.Errorf("hub %v, embedded %v, remotes %+v", c.hubOnly(), c.embedded(), c.remotes)
	}
	for args, want := range map[string]string{
		"--remote=east=http://gcscope.east.example.com":              "in clear",
		"--remote=east=https://user@gcscope.east.example.com":        "carries a user",
		"--remote=east=https://gcscope.east.example.com,forward=hub": "want token or id-token",
		"--remote=east=https://gcscope.east.example.com,x=1":         "unknown option",
		"--remote=east=https://e --all-contexts":                     "--all-contexts",
		"--remote=east=https://e --context=east --context=west":      "name of a --context",
		"--remote=east=https://e --auth=kubernetes":                  "--auth-token-file",
		"--remote=..=https://e":                                      "not a cluster name",
	} {
		if _, err := parseFlags(strings.Fields(args), io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", args, err, want)
		}
	}
}

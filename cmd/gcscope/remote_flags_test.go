package main

import (
	"io"
	"strings"
	"testing"
)

// TestRemoteFlags: --remote alone makes a hub (no embedded cluster); what would send a
// user's credential somewhere unintended is refused at start-up; a hub of remotes alone
// may leave who a user is to them (--auth=kubernetes, with single sign-on or not).
func TestRemoteFlags(t *testing.T) {
	c, err := parseFlags([]string{"--remote=east=https://gcscope.east.example.com,forward=id-token", "--remote=west=http://127.0.0.1:9000", "--auth-token-file=/dev/null"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !c.hubOnly() || c.embedded() || len(c.remotes) != 2 || c.remotes[0].Forward != "id-token" || c.remotes[1].URL != "http://127.0.0.1:9000" {
		t.Errorf("hub %v, embedded %v, remotes %+v", c.hubOnly(), c.embedded(), c.remotes)
	}
	for _, args := range []string{"--remote=east=https://e --auth=kubernetes",
		"--remote=east=https://e --auth=kubernetes --oidc-issuer-url=https://idp.example.com --oidc-client-id=gcscope"} {
		if c, err := parseFlags(strings.Fields(args), io.Discard); err != nil || !c.hubOnly() || c.auth != "kubernetes" {
			t.Errorf("%s: %v; want a hub whose remotes decide who a user is", args, err)
		}
	}
	for args, want := range map[string]string{
		"--remote=east=http://gcscope.east.example.com":              "in clear",
		"--remote=east=https://user@gcscope.east.example.com":        "carries a user",
		"--remote=east=https://gcscope.east.example.com,forward=hub": "want token or id-token",
		"--remote=east=https://gcscope.east.example.com,x=1":         "unknown option",
		"--remote=east=https://e --all-contexts":                     "--all-contexts",
		"--remote=east=https://e --context=east --context=west":      "name of a --context",
		"--remote=..=https://e":                                      "not a cluster name",
	} {
		if _, err := parseFlags(strings.Fields(args), io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", args, err, want)
		}
	}
}

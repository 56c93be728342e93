package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/registry"
	"github.com/gcscope/gcscope/server/security"
)

// shadowReporting is the test's engine with a shadow report of its own making.
type shadowReporting struct {
	registry.Engine
	report gc.ShadowReport
}

func (s shadowReporting) ShadowReport() gc.ShadowReport { return s.report }

func shadowDecision(ns, name string, uid types.UID, outcome gc.ShadowOutcome, forObj *gc.ObjectRef) gc.ShadowDecision {
	return gc.ShadowDecision{ID: 1, Outcome: outcome, DecidedAt: time.Now(), Lag: time.Second,
		Action: gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbDelete, Policy: "Background", Shadow: true, Reason: "look up owner of " + name, For: forObj,
			Object: gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: name, UID: uid}}}
}

// TestShadowReportPerUser: /api/v1/shadow lists only the decisions on objects the reader
// may list, and no decision names an object the reader may not see; the counts are the
// cluster-wide figures /metrics has too.
func TestShadowReportPerUser(t *testing.T) {
	w := newRBACWorld(t)
	bravoOwner := gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: w.nsB, Name: "bravo-owner", UID: w.uids["bravo-owner"]}
	engine := shadowReporting{Engine: w.e.engine, report: gc.ShadowReport{Enabled: true, OverdueAfter: time.Minute,
		Counts: gc.ShadowCounts{Pending: 1, Overdue: 1, Diverged: 2},
		Open: []gc.ShadowDecision{
			shadowDecision(w.nsA, "alpha-child", w.uids["alpha-child"], gc.ShadowPending, nil),
			shadowDecision(w.nsB, "bravo-child", w.uids["bravo-child"], gc.ShadowOverdue, nil),
		},
		Diverged: []gc.ShadowDecision{
			shadowDecision(w.nsA, "alpha-owner", w.uids["alpha-owner"], gc.ShadowDiverged, &bravoOwner),
			shadowDecision(w.nsB, "bravo-owner", w.uids["bravo-owner"], gc.ShadowDiverged, nil),
		}}}
	s := New(Options{Engine: engine, Kube: w.e.config, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Auth:       security.NewTokenReviewer(w.e.client.AuthenticationV1().TokenReviews()),
		Authorizer: security.NewAccessReviewer(w.e.client.AuthorizationV1().SubjectAccessReviews())})
	ctx, cancel := context.WithCancel(context.Background())
	go s.Run(ctx)
	ts := httptest.NewServer(s)
	t.Cleanup(func() { cancel(); ts.Close() })
	c := newClient(t, ts)

	report := func(user string) (gc.ShadowReport, string) {
		t.Helper()
		code, body := c.do("GET", "/api/v1/shadow", nil, http.Header{"Authorization": {"Bearer " + w.tokens[user]}})
		var r gc.ShadowReport
		if code != http.StatusOK || json.Unmarshal(body, &r) != nil {
			t.Fatalf("shadow report as %s: %d %s", user, code, body)
		}
		return r, string(body)
	}
	names := func(ds []gc.ShadowDecision) (out []string) {
		for _, d := range ds {
			out = append(out, d.Action.Object.Name)
		}
		return out
	}
	alice, aliceBody := report("alice")
	if got := names(alice.Open); len(got) != 1 || got[0] != "alpha-child" {
		t.Errorf("alice's open decisions: %v", got)
	}
	if got := names(alice.Diverged); len(got) != 1 || got[0] != "alpha-owner" {
		t.Errorf("alice's diverged decisions: %v", got)
	}
	if strings.Contains(aliceBody, "bravo") || strings.Contains(aliceBody, w.nsB) {
		t.Errorf("alice's report names bob's objects: %s", aliceBody)
	}
	if alice.Counts != engine.report.Counts || !alice.Enabled {
		t.Errorf("alice's counts %+v, want the cluster-wide %+v", alice.Counts, engine.report.Counts)
	}
	bob, bobBody := report("bob")
	if got := names(bob.Open); len(got) != 1 || got[0] != "bravo-child" || names(bob.Diverged)[0] != "bravo-owner" {
		t.Errorf("bob's decisions: open %v, diverged %v", got, names(bob.Diverged))
	}
	if strings.Contains(bobBody, "alpha") || strings.Contains(bobBody, w.nsA) {
		t.Errorf("bob's report names alice's objects: %s", bobBody)
	}
	if nobody, _ := report("nobody"); len(nobody.Open)+len(nobody.Diverged) != 0 {
		t.Errorf("the user with no RBAC sees decisions: %+v", nobody)
	}
}

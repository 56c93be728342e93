package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
)

// drawnInTime is how late the canvas may draw a state the stream delivered; a browser
// starved of CPU (a loaded machine runs its frames late) may take until drawnInFrames
// frames after the state arrived, if that is later.
const (
	drawnInTime    = 100 // ms
	drawnInFrames  = 3
	deletionSeenMs = 250
)

// TestUICascadesDrawnFrameByFrame deletes demo Deployments with each policy, from the
// delete dialog and from outside the page (as kubectl would), and checks the way there as
// the canvas drew it, frame by frame: every state the stream delivered for the Deployment,
// its ReplicaSets and Pods was drawn within 100 ms, nothing was drawn that the stream had
// not said, nothing moved during the cascade, and the order is the policy's (Foreground:
// the owner waits and goes last; Background: the owner goes first; Orphan: the dependents
// stay). gcscope runs in slow motion (150 ms before each write), as a user watching a
// cascade would set it: without it a state can last less than a frame.
//
// It runs twice: with the page holding every object (a small cluster), and summary first
// (--ui-full-graph=1: the page holds the objects of the namespaces in view and the
// selected object's component, asked for over the stream; docs/stream.md).
func TestUICascadesDrawnFrameByFrame(t *testing.T) {
	browsertest.Require(t)
	t.Run("whole", func(t *testing.T) { testCascadesDrawnFrameByFrame(t) })
	t.Run("summary-first", func(t *testing.T) { testCascadesDrawnFrameByFrame(t, "--ui-full-graph=1") })
}

func testCascadesDrawnFrameByFrame(t *testing.T, args ...string) {
	base, kubeconfig := startEmbedded(t, append([]string{"--demo", "--gc-action-delay", "150ms"}, args...)...)
	kube := clientFor(t, kubeconfig)
	summaryFirst := len(args) > 0
	shot := "ui-cascade-"
	if summaryFirst {
		shot = "ui-cascade-summary-first-"
	}

	page := browsertest.Start(t, browsertest.Options{Width: 1600, Height: 1000})
	ctx := page.Ctx
	d := uiDriver{ctx: page.Ctx, failShot: shot + "failed"}

	for _, tc := range []struct {
		deployment string
		policy     metav1.DeletionPropagation
		fromPage   bool // through the delete dialog; else through the API, as kubectl does
	}{
		{"api", metav1.DeletePropagationForeground, true},
		{"cache", metav1.DeletePropagationBackground, true},
		{"canary", metav1.DeletePropagationOrphan, true},
		{"frontend", metav1.DeletePropagationForeground, false},
	} {
		how := "dialog"
		if !tc.fromPage {
			how = "kubectl"
		}
		name := fmt.Sprintf("%s-%s-%s", strings.ToLower(string(tc.policy)), how, tc.deployment)
		t.Run(name, func(t *testing.T) {
			dep, dependents := deploymentTree(t, kube, tc.deployment)
			uids := append([]string{dep}, dependents...)
			d.run(t, "open the Deployment", chromedp.Navigate(base+"/?sel="+dep), uiReady)
			if summaryFirst {
				// The page holds what it asked for (the Deployment's component at least) and
				// what it shows: the deletion starts on a settled view.
				d.run(t, "the Deployment's component arrives", chromedp.Poll[chromedp.Void](`(() => { const d = window.gcscope.detail();
					return d.mode === "summary" && d.settled && d.answered.uids.includes("`+dep+`") && `+jsArray(uids)+`.every(u => window.gcscope.live.nodes.has(u)); })()`,
					chromedp.WithPollingTimeout(30*time.Second)))
			}
			var ok bool
			d.eval(t, `(window.gcscope.trace(`+jsArray(uids)+`), true)`, &ok)
			// Every render of the panel is checked against the state the page holds then: an
			// explanation from before the delete ("nothing: an object without owners is never
			// collected") must not be shown as current once the object is being deleted.
			d.eval(t, `(() => { window.panelContradictions = [];
				new MutationObserver(() => { const ex = document.querySelector("#explain"); const n = window.gcscope.store.nodes.get("`+dep+`");
					const next = ex?.querySelector(".next")?.textContent || "";
					if (ex && n?.beingDeleted && !ex.hasAttribute("data-outdated") && next.startsWith("Next step: nothing: an object without owners"))
						window.panelContradictions.push(next); }).observe(document.querySelector("#object-body"), { childList: true, subtree: true });
				return true; })()`, &ok)
			if tc.fromPage {
				d.run(t, "delete from the dialog", click("#delete-button"),
					chromedp.WaitVisible(chromedp.CSS("#delete-dialog")),
					click(`#delete-form input[value="`+string(tc.policy)+`"]`),
					chromedp.Poll[chromedp.Void](`document.querySelector("#delete-summary")?.textContent.startsWith("`+string(tc.policy)+`")`, chromedp.WithPollingTimeout(30*time.Second)),
					click("#delete-confirm"), chromedp.WaitNotVisible(chromedp.CSS("#delete-dialog")),
					// Named, not by uid, though a Background deletion can remove it before the answer.
					chromedp.Poll[chromedp.Void](`document.querySelector("#toast").textContent.startsWith("Deletion of Deployment demo-web/`+tc.deployment+` accepted")`,
						chromedp.WithPollingTimeout(10*time.Second)))
			} else {
				policy := tc.policy
				if err := kube.AppsV1().Deployments("demo-web").Delete(context.Background(), tc.deployment, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.policy == metav1.DeletePropagationForeground {
				// The panel follows the owner's cascade while it runs.
				d.run(t, "the panel shows the cascade's progress", chromedp.Poll[chromedp.Void](
					`/^\d+ of \d+ gone · /.test(document.querySelector("#cascade-progress[data-state=running]")?.textContent || "")`,
					chromedp.WithPollingTimeout(10*time.Second), chromedp.WithPollingInterval(20*time.Millisecond)))
			}
			d.run(t, "mid-cascade", chromedp.Sleep(400*time.Millisecond))
			browsertest.Screenshot(t, ctx, shot+name+"-during")

			waitCascadeDone(t, kube, tc.deployment, tc.policy, dep, dependents)
			// The page follows: the owner gone, and (but for Orphan) its dependents too.
			gone := jsArray(uids)
			if tc.policy == metav1.DeletePropagationOrphan {
				gone = jsArray([]string{dep})
			}
			d.run(t, "the graph shows the end", chromedp.Poll[chromedp.Void](`(() => { const d = new Set(window.gcscope.drawnUIDs());
				return `+gone+`.every(u => !d.has(u) && !window.gcscope.store.ghosts.has(u)); })()`, chromedp.WithPollingTimeout(30*time.Second)))
			browsertest.Screenshot(t, ctx, shot+name+"-after")
			var contradictions []string
			d.eval(t, `window.panelContradictions`, &contradictions)
			if len(contradictions) > 0 {
				t.Errorf("the panel showed an explanation from before the delete as current %d times: %q", len(contradictions), contradictions[0])
			}
			// The strip lists the cascade, finished, with its count: the Deployment and what
			// the delete took along (static/src/cascades.js, the one definition); what an
			// Orphan delete leaves is counted apart.
			want := fmt.Sprintf("%d of %d gone", len(uids), len(uids))
			if tc.policy == metav1.DeletePropagationOrphan {
				n := countOwnedBy(t, kube, dependents)
				want = fmt.Sprintf("1 of 1 gone · %d orphaned", n)
			}
			c, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := chromedp.Do(c, chromedp.Poll[chromedp.Void](
				`(document.querySelector('#cascades [data-owner="`+dep+`"][data-state=done]')?.textContent || "").includes("`+want+`")`,
				chromedp.WithPollingTimeout(10*time.Second)))
			cancel()
			if err != nil {
				var strip string
				d.eval(t, `document.querySelector("#cascades").textContent`, &strip)
				var members string
				d.eval(t, `(() => { const c = window.gcscope.cascades.of("`+dep+`"); const s = window.gcscope.store; return JSON.stringify([...(c?.members || [])].map(u => [u, s.nodes.get(u)?.kind, s.nodes.get(u)?.name, JSON.stringify(s.nodes.get(u)?.owners), !!s.ghosts.get(u)])); })()`, &members)
				t.Errorf("the strip does not list the finished cascade with %q: %q; members %s", want, strip, members)
			}

			var log traceLog
			d.eval(t, `window.gcscope.traceLog()`, &log)
			assertDrawnInTime(t, log)
			assertNothingMoved(t, log)
			switch tc.policy {
			case metav1.DeletePropagationForeground:
				assertForegroundDrawn(t, log, dep, dependents)
			case metav1.DeletePropagationBackground:
				assertBackgroundDrawn(t, log, dep, dependents)
			case metav1.DeletePropagationOrphan:
				assertOrphanDrawn(t, log, dep, dependents)
			}
			t.Logf("%s: %d state changes from the stream, %d drawn, over %d objects", name, len(log.Engine), len(log.Drawn), len(uids))
		})
	}
	page.NoErrorsExcept(t, explainOvertaken)
	page.Close()
}

// deploymentTree returns the uid of the demo-web Deployment name and those of its
// ReplicaSets and their Pods.
func deploymentTree(t *testing.T, kube kubernetes.Interface, name string) (string, []string) {
	t.Helper()
	ctx := context.Background()
	dep, err := kube.AppsV1().Deployments("demo-web").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rss, err := kube.AppsV1().ReplicaSets("demo-web").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := kube.CoreV1().Pods("demo-web").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rs := range rss.Items {
		if !metav1.IsControlledBy(&rs, dep) {
			continue
		}
		out = append(out, string(rs.UID))
		for _, p := range pods.Items {
			if metav1.IsControlledBy(&p, &rs) {
				out = append(out, string(p.UID))
			}
		}
	}
	if len(out) < 2 {
		t.Fatalf("demo Deployment %s has no ReplicaSet and Pods to cascade to: %v", name, out)
	}
	return string(dep.UID), out
}

// waitCascadeDone waits until the apiserver shows the deletion done: the Deployment gone
// and its dependents gone, or (Orphan) still there without a reference to it.
func waitCascadeDone(t *testing.T, kube kubernetes.Interface, name string, policy metav1.DeletionPropagation, dep string, dependents []string) {
	t.Helper()
	ctx := context.Background()
	testkit.EventuallyWithin(t, 2*time.Minute, fmt.Sprintf("the %s deletion of demo-web/%s to finish in the apiserver", policy, name), func() bool {
		if _, err := kube.AppsV1().Deployments("demo-web").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return false
		}
		objs, err := demoWebObjects(ctx, kube)
		if err != nil {
			return false
		}
		for _, d := range dependents {
			m, exists := objs[d]
			if policy != metav1.DeletePropagationOrphan && exists {
				return false
			}
			if policy == metav1.DeletePropagationOrphan && (!exists || slices.ContainsFunc(m.OwnerReferences, func(r metav1.OwnerReference) bool { return string(r.UID) == dep })) {
				return false
			}
		}
		return true
	})
}

// countOwnedBy is how many of uids were the Deployment's direct dependents (its
// ReplicaSets: the objects an Orphan delete orphans).
func countOwnedBy(t *testing.T, kube kubernetes.Interface, uids []string) int {
	t.Helper()
	rss, err := kube.AppsV1().ReplicaSets("demo-web").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rs := range rss.Items {
		if slices.Contains(uids, string(rs.UID)) {
			n++
		}
	}
	return n
}

// demoWebObjects returns demo-web's ReplicaSets and Pods by uid.
func demoWebObjects(ctx context.Context, kube kubernetes.Interface) (map[string]metav1.ObjectMeta, error) {
	out := map[string]metav1.ObjectMeta{}
	rss, err := kube.AppsV1().ReplicaSets("demo-web").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, rs := range rss.Items {
		out[string(rs.UID)] = rs.ObjectMeta
	}
	pods, err := kube.CoreV1().Pods("demo-web").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		out[string(p.UID)] = p.ObjectMeta
	}
	return out, nil
}

// traceLog is window.gcscope.traceLog(): each state change the stream delivered and each
// change the canvas drew, on the page's clock (ms).
type traceLog struct {
	Engine []stateChange `json:"engine"`
	Drawn  []stateChange `json:"drawn"`
	Placed []stateChange `json:"placed"` // where the layout put each object, drawn on screen or not
	Frames []float64     `json:"frames"` // when each animation frame ran
}

// drawDeadline is the latest a state that arrived at ms may be drawn: drawnInTime later,
// or, in a browser whose frames run late, the drawnInFrames-th frame that ran after it.
func (l traceLog) drawDeadline(ms float64) float64 {
	i, _ := slices.BinarySearch(l.Frames, ms)
	if i += drawnInFrames - 1; i < len(l.Frames) {
		return max(ms+drawnInTime, l.Frames[i])
	}
	return ms + drawnInTime
}

type stateChange struct {
	UID   string  `json:"uid"`
	State string  `json:"state"`
	X     float64 `json:"x"`
	Y     float64 `json:"y"`
	T     float64 `json:"t"`
}

func byUID(cs []stateChange) map[string][]stateChange {
	out := map[string][]stateChange{}
	for _, c := range cs {
		out[c.UID] = append(out[c.UID], c)
	}
	return out
}

// assertDrawnInTime checks both ways that the canvas drew what the stream said: every
// state the stream delivered that lasted 100 ms or more was drawn within 100 ms of its
// arrival (or drawnInFrames frames, when frames ran late), and every state drawn was the
// stream's at that moment or just before (no state drawn late, out of order or invented).
//
// An object removed less than deletionSeenMs after its deletion began may be drawn being
// deleted until then (static/src/store.js, DELETION_SEEN_MS; sooner when an owner of it
// is removed), and removed after: a Pod no kubelet runs is removed a millisecond after its
// deletion began, in the same frame. (TestUIReadsAsANewUserExpects checks that it is.)
func assertDrawnInTime(t *testing.T, log traceLog) {
	t.Helper()
	engine, drawn := byUID(log.Engine), byUID(log.Drawn)
	// heldUntil: for each uid, how long the state before its removal may still be drawn.
	heldUntil := map[string]float64{}
	for uid, changes := range engine {
		since := -1.0 // when the deletion began
		for i, c := range changes {
			switch {
			case c.State == "removed" && since >= 0 && i > 0:
				heldUntil[uid] = since + deletionSeenMs
			case c.State == "normal" || c.State == "virtual":
				since = -1
			case since < 0 && i > 0: // being deleted, from now (not traced from before it began)
				since = c.T
			}
		}
	}
	for uid, changes := range engine {
		for i, c := range changes {
			if i == 0 {
				continue // the state when tracing began: drawn before it
			}
			end := float64(1e18)
			if i+1 < len(changes) {
				end = changes[i+1].T
			}
			if end-c.T < drawnInTime {
				continue // over before it had to be drawn
			}
			due := c.T
			if c.State == "removed" {
				due = max(due, heldUntil[uid])
			}
			if !slices.ContainsFunc(drawn[uid], func(d stateChange) bool {
				return d.State == c.State && d.T >= c.T && d.T <= log.drawDeadline(due)
			}) {
				t.Errorf("%s: the stream said %q at %.0f ms; the canvas drew it not within %d ms (nor %d frames): drawn %+v", uid, c.State, c.T, drawnInTime, drawnInFrames, drawn[uid])
			}
		}
	}
	for uid, ds := range drawn {
		for _, d := range ds {
			ok := false
			for i, c := range engine[uid] {
				start, end := c.T, float64(1e18)
				if i == 0 {
					start = -1e18 // the state when tracing began held before
				}
				if i+1 < len(engine[uid]) {
					end = engine[uid][i+1].T
					if engine[uid][i+1].State == "removed" {
						end = max(end, heldUntil[uid])
					}
				}
				if c.State == d.State && d.T >= start && (end == 1e18 || d.T <= log.drawDeadline(end)) {
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s: the canvas drew %q at %.0f ms, which the stream did not say then: stream %+v", uid, d.State, d.T, engine[uid])
			}
		}
	}
}

// settleMs is how long after its last change a cascade's namespace may be laid out again
// (the page's GHOST_MS, 1,600 ms, with a margin for the frame that does it).
const settleMs = 1500

// assertNothingMoved checks that no object moved during the cascade, as drawn or as placed
// by the layout (off screen too), until the namespace had settled: settleMs after the last
// state change the stream delivered for the cascade's objects.
func assertNothingMoved(t *testing.T, log traceLog) {
	t.Helper()
	last := 0.0
	for _, c := range log.Engine {
		last = max(last, c.T)
	}
	for what, changes := range map[string][]stateChange{"drawn": log.Drawn, "placed": log.Placed} {
		for uid, cs := range byUID(changes) {
			for _, c := range cs[1:] {
				if c.T < last+settleMs && (c.X != cs[0].X || c.Y != cs[0].Y) {
					t.Errorf("%s moved (%s) %.0f ms before its namespace settled (last change at %.0f ms): %+v", uid, what, last+settleMs-c.T, last, cs)
					break
				}
			}
		}
	}
}

// firstDrawn is when uid was first drawn in state (ok false if never).
func firstDrawn(log traceLog, uid, state string) (float64, bool) {
	for _, d := range log.Drawn {
		if d.UID == uid && d.State == state {
			return d.T, true
		}
	}
	return 0, false
}

// assertForegroundDrawn: the owner drawn deleting its dependents (or waiting on them)
// before anything was drawn removed, every dependent drawn removed before the owner.
func assertForegroundDrawn(t *testing.T, log traceLog, owner string, dependents []string) {
	t.Helper()
	ownerGone, ok := firstDrawn(log, owner, "removed")
	if !ok {
		t.Fatalf("the owner was never drawn removed: %+v", byUID(log.Drawn)[owner])
	}
	waited, okW := firstDrawn(log, owner, "waiting")
	if fg, ok := firstDrawn(log, owner, "foreground"); ok && (!okW || fg < waited) {
		waited, okW = fg, true
	}
	if !okW || waited > ownerGone {
		t.Errorf("the owner was never drawn deleting its dependents before its removal: %+v", byUID(log.Drawn)[owner])
	}
	for _, d := range dependents {
		at, ok := firstDrawn(log, d, "removed")
		if !ok || at > ownerGone {
			t.Errorf("dependent %s not drawn removed before its owner (owner removed at %.0f ms): %+v", d, ownerGone, byUID(log.Drawn)[d])
		}
		if ok && okW && at < waited {
			t.Errorf("dependent %s drawn removed (%.0f ms) before its owner was drawn deleting dependents (%.0f ms)", d, at, waited)
		}
	}
}

// assertBackgroundDrawn: the owner drawn removed first, every dependent drawn removed after.
func assertBackgroundDrawn(t *testing.T, log traceLog, owner string, dependents []string) {
	t.Helper()
	ownerGone, ok := firstDrawn(log, owner, "removed")
	if !ok {
		t.Fatalf("the owner was never drawn removed: %+v", byUID(log.Drawn)[owner])
	}
	for _, d := range dependents {
		at, ok := firstDrawn(log, d, "removed")
		if !ok || at < ownerGone {
			t.Errorf("dependent %s not drawn removed after its owner (owner removed at %.0f ms): %+v", d, ownerGone, byUID(log.Drawn)[d])
		}
	}
}

// assertOrphanDrawn: the owner drawn removed, no dependent ever drawn removed.
func assertOrphanDrawn(t *testing.T, log traceLog, owner string, dependents []string) {
	t.Helper()
	if _, ok := firstDrawn(log, owner, "removed"); !ok {
		t.Fatalf("the owner was never drawn removed: %+v", byUID(log.Drawn)[owner])
	}
	for _, d := range dependents {
		if at, ok := firstDrawn(log, d, "removed"); ok {
			t.Errorf("orphaned dependent %s drawn removed at %.0f ms", d, at)
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
)

// TestUIXSlowMotion runs gcscope on its embedded default, which offers slow motion (a 1 s
// delay before each write of the engine) switched off. Switched on from the Play menu's
// box, clicked as a user would, a foreground delete of an owner of a chain of blocking
// dependents (top ← middle ← bottom) is drawn step by step, each step at least the delay
// after the one before: the owner waiting, the middle one deleted in the foreground, the
// bottom one removed, the middle one removed, the owner removed. Switched off from the
// header's switch, the same cascade takes less than slow motion's steps could. Both
// switches are in the audit log.
func TestUIXSlowMotion(t *testing.T) {
	browsertest.Require(t)
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	base, kubeconfig := startEmbedded(t, "--demo=false", "--audit-log", auditLog)
	kube := clientFor(t, kubeconfig)
	ctx := context.Background()
	const delay = time.Second // the embedded default
	session := func() (string, bool) {
		t.Helper()
		var s struct {
			ActionDelay string `json:"actionDelay"`
			SlowMotion  bool   `json:"slowMotion"`
		}
		mustGetJSON(t, base+"/api/v1/session", &s)
		return s.ActionDelay, s.SlowMotion
	}
	waitSlowMotion := func(what string, on bool) {
		t.Helper()
		testkit.EventuallyWithin(t, 10*time.Second, fmt.Sprintf("%s: the engine's slow motion to be %v", what, on), func() bool {
			_, now := session()
			return now == on
		})
	}
	if d, on := session(); d != delay.String() || on {
		t.Fatalf("the embedded default: action delay %q, slow motion %v; want %v, off", d, on, delay)
	}
	const ns = "slow"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	chain := func(prefix string) []string {
		top := createConfigMap(t, kube, ns, prefix+"-top")
		middle := createConfigMap(t, kube, ns, prefix+"-middle", top)
		bottom := createConfigMap(t, kube, ns, prefix+"-bottom", middle)
		return []string{string(top.UID), string(middle.UID), string(bottom.UID)}
	}

	page := browsertest.Start(t, browsertest.Options{Width: 1600, Height: 1000})
	d := uiDriver{ctx: page.Ctx, failShot: "ui-slow-failed"}
	poll := func(what, expr string, timeout time.Duration) {
		t.Helper()
		d.run(t, what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(20*time.Millisecond)))
	}
	held := func(uids []string) string {
		return jsArray(uids) + `.every((u) => window.gcscope.store.nodes.has(u))`
	}
	gone := func(prefix string) {
		t.Helper()
		testkit.Eventually(t, "the cascade to finish in the apiserver", func() bool {
			list, err := kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err == nil && !slices.ContainsFunc(list.Items, func(cm corev1.ConfigMap) bool { return strings.HasPrefix(cm.Name, prefix+"-") })
		})
	}

	d.run(t, "load the page", chromedp.Navigate(base+"/"), uiReady, chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)),
		chromedp.WaitVisible(chromedp.CSS("#slow-motion")))
	var header struct {
		Checked bool   `json:"checked"`
		Label   string `json:"label"`
	}
	d.eval(t, `(() => { const b = document.getElementById("slow-motion"); return { checked: b.checked, label: b.parentElement.textContent }; })()`, &header)
	if header.Checked || !strings.Contains(header.Label, "1s") {
		t.Errorf("the header's switch: checked %v, %q; want offered (1s) and off", header.Checked, header.Label)
	}

	// On, from the Play menu's box.
	d.run(t, "open the Play menu", click("#play-button"), chromedp.WaitVisible(chromedp.CSS("#play-slow")))
	var box struct {
		Checked, Disabled bool
		Label             string
	}
	d.eval(t, `(() => { const b = document.getElementById("play-slow"); return { checked: b.checked, disabled: b.disabled, label: b.parentElement.textContent }; })()`, &box)
	if box.Checked || box.Disabled || !strings.Contains(box.Label, "1s") {
		t.Errorf("the Play menu's slow-motion box: %+v; want offered (1s), unchecked", box)
	}
	d.run(t, "tick slow motion", click("#play-slow"))
	waitSlowMotion("ticking the Play menu's box", true)
	poll("the header's switch follows", `document.getElementById("slow-motion").checked`, 5*time.Second)
	browsertest.Screenshot(t, page.Ctx, "ui-slow-menu")
	d.run(t, "close the menu", chromedp.KeyEvent("\u001b"), chromedp.WaitNotVisible(chromedp.CSS("#play-menu")))

	// A foreground delete from the dialog, in slow motion.
	a := chain("a")
	d.run(t, "select the top", chromedp.Navigate(base+"/?sel="+a[0]), uiReady, chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	poll("the chain in the page", held(a), 30*time.Second)
	d.eval(t, `(window.gcscope.trace(`+jsArray(a)+`), true)`, new(bool))
	// The cascade's steps, in order, each as the canvas draws it.
	steps := []struct {
		what   string
		uid    string
		states []string
	}{
		{"the top waiting on its dependents", a[0], []string{"foreground", "waiting"}},
		{"the middle one deleted in the foreground", a[1], []string{"foreground", "waiting", "deleting"}},
		{"the bottom one removed", a[2], []string{"removed"}},
		{"the middle one removed", a[1], []string{"removed"}},
		{"the top removed", a[0], []string{"removed"}},
	}
	d.run(t, "delete in the foreground", click("#delete-button"), chromedp.WaitVisible(chromedp.CSS("#delete-dialog")),
		click(`#delete-form input[value="Foreground"]`),
		chromedp.Poll[chromedp.Void](`document.querySelector("#delete-summary")?.textContent.startsWith("Foreground")`, chromedp.WithPollingTimeout(30*time.Second)),
		click("#delete-confirm"), chromedp.WaitNotVisible(chromedp.CSS("#delete-dialog")))
	// A screenshot of each step once it is drawn: the cascade as a user watches it.
	for i, s := range steps {
		poll(s.what+" drawn", `window.gcscope.traceLog().drawn.some((c) => c.uid === `+jsQuoted(s.uid)+` && `+jsArray(s.states)+`.includes(c.state))`, 30*time.Second)
		browsertest.Screenshot(t, page.Ctx, fmt.Sprintf("ui-slow-step-%d", i+1))
	}
	gone("a")
	var slow traceLog
	d.eval(t, `window.gcscope.traceLog()`, &slow)
	// Each step waits the delay: a write of the engine that follows what the engine saw
	// of the step before. The stream's frames (every 50 ms) and the page's work take some
	// of it off the gap between the arrivals of two steps, never as much as 150 ms. Each
	// step is drawn, and before the next one arrives: slow motion shows every state.
	var at, drawn []float64
	for i, s := range steps {
		ms, ok := firstDrawnOf(slow.Engine, s.uid, s.states...)
		dms, okD := firstDrawnOf(slow.Drawn, s.uid, s.states...)
		if !ok || !okD {
			t.Fatalf("%s: never said by the stream (%v) or never drawn (%v): stream %+v, drawn %+v", s.what, ok, okD, byUID(slow.Engine)[s.uid], byUID(slow.Drawn)[s.uid])
		}
		if i > 0 {
			gap := time.Duration((ms - at[i-1]) * float64(time.Millisecond))
			t.Logf("%s: arrived %v after the step before, drawn %.0f ms after it arrived", s.what, gap.Round(time.Millisecond), dms-ms)
			if gap < delay-150*time.Millisecond {
				t.Errorf("%s arrived %v after the step before; in slow motion, want about %v or more", s.what, gap.Round(time.Millisecond), delay)
			}
			if drawn[i-1] > ms {
				t.Errorf("%s arrived at %.0f ms, before the step before was drawn (%.0f ms)", s.what, ms, drawn[i-1])
			}
		}
		at, drawn = append(at, ms), append(drawn, dms)
	}

	// Off, from the header's switch: the same cascade runs faster than slow motion's steps.
	d.run(t, "untick slow motion in the header", click("#slow-motion"))
	waitSlowMotion("unticking the header's switch", false)
	b := chain("b")
	d.run(t, "select the second top", chromedp.Navigate(base+"/?sel="+b[0]), uiReady, chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	poll("the second chain in the page", held(b), 30*time.Second)
	var on bool
	if d.eval(t, `document.getElementById("slow-motion").checked`, &on); on {
		t.Error("after a reload, the header's switch says slow motion is on; the engine's is off")
	}
	d.eval(t, `(window.gcscope.trace(`+jsArray(b)+`), true)`, new(bool))
	fg := metav1.DeletePropagationForeground
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "b-top", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	gone("b")
	poll("the second top drawn removed", `window.gcscope.traceLog().drawn.some((c) => c.uid === `+jsQuoted(b[0])+` && c.state === "removed")`, 10*time.Second)
	var fast traceLog
	d.eval(t, `window.gcscope.traceLog()`, &fast)
	// From the top's first traced state, before the delete: at full speed its foreground
	// state can come and go within one frame of the stream (CI saw it never held), and a
	// start taken earlier only makes the cascade look slower.
	began, ok1 := firstDrawnOf(fast.Engine, b[0], "normal", "foreground", "waiting", "deleting")
	ended, ok2 := firstDrawnOf(fast.Engine, b[0], "removed")
	took := time.Duration((ended - began) * float64(time.Millisecond))
	if slowest := 4 * (delay - 150*time.Millisecond); !ok1 || !ok2 || took >= slowest {
		t.Errorf("with slow motion off, the cascade took %v (from the stream: %+v); slow motion's four steps take %v or more", took, byUID(fast.Engine)[b[0]], slowest)
	}
	t.Logf("the same cascade: %v in slow motion, %v without", time.Duration((at[len(at)-1]-at[0])*float64(time.Millisecond)).Round(time.Millisecond), took.Round(time.Millisecond))
	browsertest.Screenshot(t, page.Ctx, "ui-slow-off")

	// The audit log has both switches, as asked, and their results.
	raw, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	var switched []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var e struct {
			Action  string `json:"action"`
			Enabled *bool  `json:"enabled"`
			Result  string `json:"result"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Action == "slowMotion" && e.Enabled != nil {
			switched = append(switched, fmt.Sprintf("%v %s", *e.Enabled, e.Result))
		}
	}
	if !slices.Equal(switched, []string{"true ok", "false ok"}) {
		t.Errorf("the audit log has the slow-motion switches %q; want on then off, both ok", switched)
	}
	page.NoErrorsExcept(t, explainOvertaken)
	page.Close()
}

// TestUIXSlowMotionFlag: what --gc-action-delay means for the slow motion the page offers.
// The embedded cluster offers 1 s, switched off; a delay given is offered switched on; 0,
// or a cluster gcscope does not own (unless a delay is given), offers none; a shadow engine
// writes nothing, so nothing to slow down.
func TestUIXSlowMotionFlag(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		delay time.Duration
		off   bool
	}{
		{nil, time.Second, true},
		{[]string{"--gc-action-delay", "500ms"}, 500 * time.Millisecond, false},
		{[]string{"--gc-action-delay", "0"}, 0, false},
		{[]string{"--gc-mode", "shadow"}, 0, false},
		{[]string{"--kubeconfig", "kc"}, 0, false},
		{[]string{"--kubeconfig", "kc", "--gc-action-delay", "2s"}, 2 * time.Second, false},
	} {
		c, err := parseFlags(tc.args, io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if c.actionDelay != tc.delay || c.slowMotionOff != tc.off {
			t.Errorf("%q: action delay %v, switched off %v; want %v, %v", tc.args, c.actionDelay, c.slowMotionOff, tc.delay, tc.off)
		}
	}
}

// firstDrawnOf is when uid was first in one of states in changes.
func firstDrawnOf(changes []stateChange, uid string, states ...string) (float64, bool) {
	for _, c := range changes {
		if c.UID == uid && slices.Contains(states, c.State) {
			return c.T, true
		}
	}
	return 0, false
}

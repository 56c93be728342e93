package static_test

// Issue 36, item 2: one cascade, one count. A Deployment deleted in the foreground, in slow
// motion, is counted alike by every place that counts it — the strip, the owner's box, the
// object panel, the history's timeline and list, and the recording — at moments in the
// middle of it, not only at the end; and time travel to such a moment says what the live
// page said then.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/history"
	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server"
)

// slowMotion is the shared engine's delay before each write, while switched on.
const slowMotion = 2500 * time.Millisecond

// startHistoryUI records engine into a fresh recording and serves a second gcscope on it
// with that history, at ui.historyBase.
func startHistoryUI(e *testkit.Env, engine *gc.GarbageCollector, x *deletion.Explainer) error {
	dir, err := os.MkdirTemp("", "gcscope-static-history-")
	if err != nil {
		return err
	}
	e.Cleanup(func() { os.RemoveAll(dir) })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := history.Open(history.Options{Dir: dir, Logger: quiet})
	if err != nil {
		return err
	}
	e.Cleanup(func() { store.Close() })
	rec := history.NewRecorder(store, engine, history.RecorderOptions{})
	e.Go(func(ctx context.Context) error { return rec.Run(ctx) })
	s := server.New(server.Options{Engine: engine, Kube: e.Config, Deletions: x, History: store, Logger: quiet, Audit: io.Discard})
	e.Go(func(ctx context.Context) error { s.Run(ctx); return nil })
	ts := httptest.NewServer(s)
	e.Cleanup(ts.Close)
	ui.historyBase = ts.URL
	return nil
}

// countsJS reads every place's count of the cascade of owner OWNER: the strip, the box (as
// drawn), the object panel, the history's (the timeline's tooltip and the history tab's
// rows say it through one hook), and the recording's own (history.Cascade.Count, from the
// timeline's data); each cut to its count ("5 of 6 gone · 1 kept").
const countsJS = `(() => {
  const g = window.gcscope, uid = OWNER;
  const cut = (s) => (s || "").match(/\d+ of \d+ gone( · \d+ (kept|orphaned))?/)?.[0] || "";
  const rc = g.timeline()?.data?.cascades.find((c) => c.root.uid === uid);
  const kept = rc ? rc.kept || 0 : 0;
  return {
    strip: cut(document.querySelector('#cascades button[data-owner="' + uid + '"] .muted')?.textContent),
    box: cut(g.drawn(uid)?.label?.[0]),
    panel: cut(document.getElementById("cascade-progress")?.textContent),
    history: rc ? cut(g.timeline().hooks.count(rc)) : "",
    rows: [...new Set([...document.querySelectorAll('#history-panel [data-cascade-count]')].filter((el) => rc && el.dataset.cascadeCount === String(rc.id)).map((el) => cut(el.textContent)))],
    drawnGone: MEMBERS.filter((u) => g.drawn(u)?.state === "removed").length,
    recorded: rc ? rc.deleted + " of " + (rc.objects - kept) + " gone" + (kept ? " · " + kept + " kept" : "") : "",
    at: Date.now(),
  };
})()`

type counts struct {
	Strip, Box, Panel, History, Recorded string
	Rows                                 []string
	// DrawnGone: how many of the members the canvas last drew removed (the box's count is
	// drawn in the same frame, so they must agree).
	DrawnGone int
	At        float64
}

var countRE = regexp.MustCompile(`^(\d+) of (\d+) gone`)

// disagree: the places that say c's count at one moment do not say the same (a box no
// longer drawn and a history not loaded yet say nothing).
func disagree(c counts) bool {
	return c.Strip != c.Box && c.Box != "" || c.Strip != c.Panel || c.History != "" && c.History != c.Strip
}

// TestOneCascadeOneCount: a Deployment with a ReplicaSet of 4 Pods, and a ClusterRole naming
// it through an invalid reference (kept), deleted in the foreground from the dialog in slow
// motion. The dialog predicts 6 deleted; the strip, the box, the panel and the history say
// "N of 6 gone · 1 kept" alike at every moment read while it runs, the recording says the
// same once it has caught up with a step, and "6 of 6 gone · 1 kept" at the end. Time travel
// to a moment in the middle says what the live page said then, in the strip, box and panel.
// Before, the strip said "0/5", the history "6 deleted" of 7 objects, and time travel "1 of
// 6 gone" with nothing gone.
func TestOneCascadeOneCount(t *testing.T) {
	testkit.Shared(t, uiOptions)
	ctx := context.Background()
	ns := namespace(t, "one-count-")
	labels := map[string]string{"app": "api"}
	dep, err := ui.env.Client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "api"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](4), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "api", Image: "example.com/api:1"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role, err := ui.env.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-invalid-owner",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ui.env.Client.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	var members []string // those the delete takes
	testkit.Eventually(t, "the engine observes the Deployment, its ReplicaSet and 4 Pods, and the ClusterRole", func() bool {
		pods, err := ui.env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		rss, err2 := ui.env.Client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil || err2 != nil || len(pods.Items) != 4 || len(rss.Items) != 1 {
			return false
		}
		members = []string{string(dep.UID), string(rss.Items[0].UID)}
		for _, p := range pods.Items {
			members = append(members, string(p.UID))
		}
		for _, u := range []string{string(dep.UID), string(role.UID), string(rss.Items[0].UID), string(pods.Items[0].UID), string(pods.Items[3].UID)} {
			if n, ok := ui.engine.Node(types.UID(u)); !ok || !n.Observed {
				return false
			}
		}
		return true
	})

	p := openAt(t, ui.historyBase, 1600, 1000, "?ns="+ns)
	owner := strconv.Quote(string(dep.UID))
	memberList, _ := json.Marshal(members)
	js := strings.NewReplacer("OWNER", owner, "MEMBERS", string(memberList)).Replace(countsJS)
	read := func() counts { return eval[counts](p, js) }
	eval[bool](p, `(window.gcscope.recordDrawn(), true)`)
	p.until("the timeline loaded", `!!window.gcscope.timeline()?.data`)

	ui.engine.SetSlowMotion(true)
	t.Cleanup(func() { ui.engine.SetSlowMotion(false) })
	p.clickBox(string(dep.UID))
	p.click("#delete-button")
	p.run("choose Foreground", chromedp.WaitVisible(chromedp.CSS("#delete-dialog")), chromedp.Click(chromedp.CSS(`#delete-form input[value="Foreground"]`)))
	p.until("the Foreground prediction", `document.getElementById("delete-summary")?.textContent.startsWith("Foreground")`)
	summary := p.text("#delete-summary")
	m := regexp.MustCompile(`(\d+) objects? will be deleted`).FindStringSubmatch(summary)
	if m == nil || m[1] != "6" {
		t.Fatalf("the dialog says %q; want 6 objects deleted (the Deployment, its ReplicaSet, 4 Pods)", summary)
	}
	browsertest.Screenshot(t, p.ctx, "ui-one-count-dialog")
	p.click("#delete-confirm")
	p.until("the cascade in the strip", `!!document.querySelector('#cascades button[data-owner="' + `+owner+` + '"]')`)

	// Every moment read while it runs: the page's places agree; each count seen once.
	var seen []counts
	recordedAgreed := 0
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("the cascade did not end; last read %+v", seen[len(seen)-1])
		}
		c := read()
		if c.Strip == "" || c.Box == "" && c.Strip != "6 of 6 gone · 1 kept" {
			continue // drawn in the next frame
		}
		if m := countRE.FindStringSubmatch(c.Box); m != nil && m[1] != strconv.Itoa(c.DrawnGone) {
			browsertest.Screenshot(t, p.ctx, "ui-one-count-box-ahead")
			t.Fatalf("the box says %q while the canvas draws %d of its members removed, in the same frame", c.Box, c.DrawnGone)
		}
		if disagree(c) {
			// The strip and the panel redraw within a tenth of a second of the canvas (the box
			// and the history count at once): they must come to agree within 200 ms, that tenth
			// with room for a frame. A step of slow motion lasts far longer.
			var c2 counts
			agreed := func() bool { c2 = read(); return !disagree(c2) }
			if testkit.PollEvery(context.Background(), 10*time.Millisecond, 200*time.Millisecond, agreed) != nil {
				browsertest.Screenshot(t, p.ctx, "ui-one-count-disagree")
				t.Fatalf("the places disagree at one moment, a tenth of a second after they first did (%+v): %+v", c, c2)
			}
			continue
		}
		for _, r := range c.Rows {
			if r != c.Strip {
				t.Errorf("the history tab's row says %q while the strip says %q", r, c.Strip)
			}
		}
		if !countRE.MatchString(c.Strip) || countRE.FindStringSubmatch(c.Strip)[2] != "6" {
			t.Fatalf("the strip says %q; want N of 6 gone (the dialog predicted 6)", c.Strip)
		}
		if len(seen) == 0 || seen[len(seen)-1].Strip != c.Strip {
			seen = append(seen, c)
			browsertest.Screenshot(t, p.ctx, "ui-one-count-"+regexp.MustCompile(`\D+`).ReplaceAllString(countRE.FindString(c.Strip), "-"))
		}
		if c.Recorded == c.Strip {
			recordedAgreed++
		}
		if c.Strip == "6 of 6 gone · 1 kept" && c.Recorded == c.Strip {
			break
		}
		p.run("a frame", browsertest.Frames(1))
	}
	// The step in the middle the page showed longest (slow motion holds each write 2.5 s; the
	// Pods' removals, four in parallel, follow each other within milliseconds), and the
	// middle of it: when the page first read a count is up to a screenshot late, so a
	// moment just after that read can already be past the step's end in the recording.
	var mid counts
	dwell := 0.0
	for i, c := range seen[:len(seen)-1] {
		if g := countRE.FindStringSubmatch(c.Strip)[1]; g != "0" && g != "6" && seen[i+1].At-c.At > dwell {
			mid, dwell = c, seen[i+1].At-c.At
		}
	}
	if dwell == 0 {
		t.Fatalf("no moment in the middle of the cascade was read: %+v", seen)
	}
	if recordedAgreed == 0 {
		t.Errorf("the recording never said what the page said")
	}
	t.Logf("counts seen: %+v", seen)

	// Time travel to the middle of that step: the same count.
	at := mid.At + dwell/2
	p.run("travel", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`window.gcscope.travel().seek(%f)`, at)))
	p.until("time travel at the moment", fmt.Sprintf(`(() => { const tr = window.gcscope.travel(); return tr.active && Math.abs(tr.at - %f) < 1 && !!document.querySelector('#cascades button[data-owner="' + %s + '"]'); })()`, at, owner))
	p.run("frames", browsertest.Frames(3))
	var tc counts
	p.until("the moment's cascade drawn", `(() => { const c = `+js+`; return !!c.strip && !!c.box && !!c.panel; })()`)
	tc = read()
	browsertest.Screenshot(t, p.ctx, "ui-one-count-time-travel")
	if tc.Strip != mid.Strip || tc.Box != mid.Strip || tc.Panel != mid.Strip {
		t.Errorf("time travel to %s says strip %q, box %q, panel %q; the live page said %q then",
			time.UnixMilli(int64(at)).Format(time.RFC3339Nano), tc.Strip, tc.Box, tc.Panel, mid.Strip)
	}
	p.page.NoErrorsExcept(t, explainOvertaken) // the panel asked about the Deployment as the cascade removed it
}

// openAt is openUI on another gcscope (base).
func openAt(t *testing.T, base string, w, h int, query string) *uiPage {
	t.Helper()
	page := browsertest.Start(t, browsertest.Options{Width: w, Height: h})
	ctx, cancel := context.WithTimeout(page.Ctx, 4*time.Minute)
	t.Cleanup(cancel)
	p := &uiPage{t: t, page: page, ctx: ctx}
	p.run("load the page", chromedp.Navigate(base+"/"+query),
		chromedp.Poll[chromedp.Void](`window.gcscope && window.gcscope.ready`, chromedp.WithPollingTimeout(60*time.Second)),
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)))
	return p
}

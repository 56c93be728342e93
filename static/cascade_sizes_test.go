package static_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/chromedp/chromedp"

	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
)

// sizeProbe reads, on one page during a cascade of OWNER, what a user at that window size
// sees: the theme in force, whether the canvas drew anything (distinct colours in a sample
// of its pixels), the strip's count and whether it lies whole inside the window, and the
// owner box's count.
const sizeProbe = `(() => {
  const g = window.gcscope, uid = OWNER;
  const cut = (s) => (s || "").match(/\d+ of \d+ gone( · \d+ (kept|orphaned))?/)?.[0] || "";
  const canvas = document.getElementById("graph");
  const colours = new Set();
  if (canvas) {
    const copy = document.createElement("canvas");
    copy.width = canvas.width;
    copy.height = canvas.height;
    const ctx = copy.getContext("2d", { willReadFrequently: true });
    ctx.drawImage(canvas, 0, 0);
    const d = ctx.getImageData(0, 0, copy.width, copy.height).data;
    for (let i = 0; i < d.length; i += 4 * 97) colours.add(d[i] + "," + d[i + 1] + "," + d[i + 2]);
  }
  const strip = document.querySelector('#cascades button[data-owner="' + uid + '"]');
  const r = strip?.getBoundingClientRect();
  const muted = strip?.querySelector(".muted");
  return {
    theme: document.documentElement.dataset.theme || "",
    background: getComputedStyle(document.body).backgroundColor,
    colours: colours.size,
    strip: cut(muted?.textContent),
    stripInside: !!r && r.left >= 0 && r.right <= innerWidth + 0.5 && r.top >= 0 && r.bottom <= innerHeight + 0.5,
    stripWhole: !!muted && muted.scrollWidth <= muted.clientWidth + 1,
    box: cut(g.drawn(uid)?.label?.[0]),
  };
})()`

type sizeView struct {
	Theme, Background, Strip, Box string
	Colours                       int
	StripInside, StripWhole       bool
}

// TestACascadeReadsAtEverySize: one Foreground cascade in slow motion, watched at 1600×1000,
// 1280×800 and 800×600, light and dark. At each size and theme, in the middle of the
// cascade, the page is in that theme, the canvas drew the graph (not a blank or black
// rectangle), the strip's count lies whole inside the window, and it is the owner box's
// count. The screenshots (ui-sizes-*.png) are the ones to look at.
func TestACascadeReadsAtEverySize(t *testing.T) {
	testkit.Shared(t, uiOptions)
	ctx := context.Background()
	ns := namespace(t, "sizes-")
	labels := map[string]string{"app": "web"}
	dep, err := ui.env.Client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.com/web:1"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the engine observes the Deployment, its ReplicaSet and 3 Pods", func() bool {
		pods, err := ui.env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 3 {
			return false
		}
		for _, p := range pods.Items {
			if n, ok := ui.engine.Node(p.UID); !ok || !n.Observed {
				return false
			}
		}
		n, ok := ui.engine.Node(dep.UID)
		return ok && n.Observed
	})

	type size struct{ w, h int }
	var pages []*uiPage
	var names []string
	for _, s := range []size{{1600, 1000}, {1280, 800}, {800, 600}} {
		for _, theme := range []string{"light", "dark"} {
			pages = append(pages, openAt(t, ui.base, s.w, s.h, "?ns="+ns+"&theme="+theme))
			names = append(names, fmt.Sprintf("%dx%d-%s", s.w, s.h, theme))
		}
	}
	for _, p := range pages {
		p.until("the Deployment drawn", `window.gcscope.screenOf(`+strconv.Quote(string(dep.UID))+`) !== null`)
		eval[bool](p, `(window.gcscope.recordDrawn(), true)`)
	}

	ui.engine.SetSlowMotion(true)
	t.Cleanup(func() { ui.engine.SetSlowMotion(false) })
	if err := ui.env.Client.AppsV1().Deployments(ns).Delete(ctx, dep.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	js := strings.ReplaceAll(sizeProbe, "OWNER", strconv.Quote(string(dep.UID)))
	// The middle: some of the five gone, not all. Every page waits for it at once (in the
	// page, not polled from here), so none misses it while another is read; the page's
	// wait takes the strip and the box from one frame.
	const inTheMiddle = `(() => { const v = ` + "JS" + `; return /^[1-4] of 5 gone$/.test(v.strip) && v.box === v.strip ? v : null; })()`
	views := make([]sizeView, len(pages))
	errs := make([]error, len(pages))
	var wg sync.WaitGroup
	for i, p := range pages {
		wg.Go(func() {
			views[i], errs[i] = chromedp.Run(p.ctx, chromedp.Poll[sizeView](strings.Replace(inTheMiddle, "JS", js, 1),
				chromedp.WithPollingTimeout(90*time.Second)))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: the middle of the cascade in the strip and the box: %v", names[i], err)
		}
	}
	for i, p := range pages {
		browsertest.Screenshot(t, p.ctx, "ui-sizes-"+names[i])
		v := views[i]
		theme := names[i][strings.LastIndex(names[i], "-")+1:]
		if v.Theme != theme {
			t.Errorf("%s: the page is in theme %q", names[i], v.Theme)
		}
		if dark := darkBackground(v.Background); dark != (theme == "dark") {
			t.Errorf("%s: the page's background is %s", names[i], v.Background)
		}
		if v.Colours < 4 {
			t.Errorf("%s: the canvas drew %d distinct colours in its sample: blank", names[i], v.Colours)
		}
		if !v.StripInside || !v.StripWhole {
			out, _ := json.Marshal(v)
			t.Errorf("%s: the strip's count is cut or outside the window: %s", names[i], out)
		}
		p.page.NoErrors(t)
	}
	testkit.Eventually(t, "the cascade over", func() bool {
		_, ok := ui.engine.Node(types.UID(dep.UID))
		return !ok
	})
}

// darkBackground: a CSS rgb() colour whose channels average below half.
func darkBackground(css string) bool {
	var r, g, b int
	if _, err := fmt.Sscanf(strings.ReplaceAll(css, " ", ""), "rgb(%d,%d,%d)", &r, &g, &b); err != nil {
		return false
	}
	return r+g+b < 3*128
}

package static_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/internal/browsertest"
	"github.com/gcscope/gcscope/internal/testkit"
)

// settleMs: a namespace may be laid out again once no object of it changed for the
// page's GHOST_MS (1,600 ms); this, with a margin for the frame that lays it out.
const settleMs = 1500

type traced struct {
	UID, State string
	X, Y, T    float64
}

// TestANamespaceBesideMovesNoCascade: while a Foreground cascade runs in namespace b,
// namespace a, laid out before it on the same shelf, grows (an owner and a dependent
// created), and the stream starts again from a fresh snapshot. None of b's objects moves
// before b has settled: a's box waits for its new width until then, since a wider a would
// push b's box aside while the user watches its objects go, and so does the whole layout a
// snapshot asks for. Before, b's box moved at once.
func TestANamespaceBesideMovesNoCascade(t *testing.T) {
	testkit.Shared(t, uiOptions)
	a, b := namespace(t, "still-a-"), namespace(t, "still-b-")
	configMap(t, a, "first", configMap(t, a, "first-owner"))
	owner := configMap(t, b, "owner")
	watched := []types.UID{owner.UID}
	for i := range 4 {
		watched = append(watched, configMap(t, b, fmt.Sprintf("dependent-%d", i), owner).UID)
	}
	p := openUI(t, 1600, 1000, "?ns="+a+"&ns="+b)
	list := uidsJS(watched...)
	p.until("b's objects drawn", list+`.every((u) => window.gcscope.drawnUIDs().includes(u))`)
	eval[bool](p, `(window.gcscope.trace(`+list+`), true)`)

	ui.engine.SetSlowMotion(true)
	t.Cleanup(func() { ui.engine.SetSlowMotion(false) })
	if err := ui.env.Client.CoreV1().ConfigMaps(b).Delete(context.Background(), owner.Name,
		metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	// After each of b's removals, a grows by a column, arriving while b is still settling.
	var grown []types.UID
	for i := 1; i <= len(watched)-1; i++ {
		p.until(fmt.Sprintf("%d of b's objects removed", i), fmt.Sprintf(`window.gcscope.traceLog().engine.filter((c) => c.state === "removed").length >= %d`, i))
		o := configMap(t, a, fmt.Sprintf("owner-%d", i))
		grown = append(grown, o.UID, configMap(t, a, fmt.Sprintf("dependent-%d", i), o).UID)
		if i == 2 {
			// And the stream starts again from a fresh snapshot (the server no longer held
			// what the page missed, or it read too slowly): the whole layout is redone, but
			// for b's box.
			eval[bool](p, `window.gcscope.resnapshot()`)
		}
	}
	p.until("the cascade's end drawn, and a's new objects", `(() => { const d = new Set(window.gcscope.drawnUIDs());
		return `+list+`.every((u) => !d.has(u) && !window.gcscope.store.ghosts.has(u)) && `+uidsJS(grown...)+`.every((u) => d.has(u)); })()`)

	log := eval[struct{ Engine, Placed []traced }](p, `window.gcscope.traceLog()`)
	lastChangeBefore := func(at float64) float64 {
		last := -1e9
		for _, c := range log.Engine {
			if c.T <= at {
				last = max(last, c.T)
			}
		}
		return last
	}
	first := map[string]traced{}
	for _, c := range log.Placed {
		f, ok := first[c.UID]
		if !ok {
			first[c.UID] = c
			continue
		}
		if c.X != f.X || c.Y != f.Y {
			if since := c.T - lastChangeBefore(c.T); since < settleMs {
				browsertest.Screenshot(t, p.page.Ctx, "ui-still-moved")
				t.Errorf("%s moved from (%.0f, %.0f) to (%.0f, %.0f) %.0f ms after b's last change; want none before %d ms", c.UID, f.X, f.Y, c.X, c.Y, since, settleMs)
				break
			}
		}
	}
}

package static

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// legendProbe resolves the color of every state and marker of the legend under a theme
// and measures how far apart each pair is (CIE76 ΔE in Lab: about 2.3 is just noticeable,
// under 10 reads as "the same color" at a glance on a small box).
const legendProbe = `(async (theme) => {
  document.documentElement.dataset.theme = theme;
  const { STATES, MARKERS } = await import("/states.js");
  const cs = getComputedStyle(document.documentElement);
  const lab = (hex) => {
    const n = parseInt(hex.trim().slice(1), 16);
    const lin = (c) => { c /= 255; return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    const [r, g, b] = [lin(n >> 16 & 255), lin(n >> 8 & 255), lin(n & 255)];
    const f = (t) => t > 0.008856 ? Math.cbrt(t) : 7.787 * t + 16 / 116;
    const x = f((0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047), y = f(0.2126 * r + 0.7152 * g + 0.0722 * b), z = f((0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883);
    return [116 * y - 16, 500 * (x - y), 200 * (y - z)];
  };
  const all = [...STATES, ...MARKERS].map((s) => ({ id: s.id, color: cs.getPropertyValue(s.color).trim() }));
  const pairs = [];
  for (let i = 0; i < all.length; i++) for (let j = i + 1; j < all.length; j++) {
    const [a, b] = [lab(all[i].color), lab(all[j].color)];
    pairs.push({ a: all[i].id, b: all[j].id, ca: all[i].color, cb: all[j].color, de: Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]) });
  }
  return pairs;
})`

// minLegendDistance is how far apart (ΔE) any two states or markers of the legend must
// be. Before: "being deleted" and "removed" were reds 8.1 apart, "in backoff" was the very
// color of "deleting dependents", "virtual" that of "normal", and in the dark theme
// "waiting on blocking dependents" 14.1 from "deleting dependents".
const minLegendDistance = 20

func TestLegendColorsAreTellableApart(t *testing.T) {
	page, ctx := modulePage(t)
	type pair struct {
		A, B, Ca, Cb string
		De           float64
	}
	for _, theme := range []string{"light", "dark"} {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]pair](legendProbe+`("`+theme+`")`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) < 36 {
			t.Fatalf("%s: %d pairs, want those of the 7 states and 3 markers", theme, len(got))
		}
		for _, p := range got {
			if p.De < minLegendDistance {
				t.Errorf("%s theme: %q (%s) and %q (%s) are %.1f apart, want at least %d", theme, p.A, p.Ca, p.B, p.Cb, p.De, minLegendDistance)
			}
		}
	}
	page.NoErrors(t)
}

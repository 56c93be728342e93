package static

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestTheDiscoveryBannerTicks: the banner's "(30s ago)" is a relative time, and it goes on
// being true: five seconds later (the page's clock, moved by the test, and the frames'
// ticks) it says 35s, not 30s as before (issue 36, item 6: two moments 5 s apart both said
// "30s ago"). The APIService's "since" ticks the same way.
func TestTheDiscoveryBannerTicks(t *testing.T) {
	page, ctx := modulePage(t)
	js := `(async () => {
  let now = Date.parse("2026-11-29T10:00:30Z");
  Date.now = () => now;
  const since = "2026-11-29T10:00:00Z";
  window.fetch = async () => new Response(JSON.stringify({ apiServices: [{ name: "v1.example.com", groupVersion: "example.com/v1",
    available: "False", reason: "ServiceNotFound", since, service: "x/api", serviceExists: false, readyEndpoints: 0 }] }),
    { headers: { "Content-Type": "application/json" } });
  document.body.innerHTML = '<div id="discovery-banner" hidden></div>';
  const { DiscoveryBanner } = await import("/banner.js");
  const b = new DiscoveryBanner(document.getElementById("discovery-banner"));
  b.update({ "example.com/v1": { error: "the server could not find the requested resource", since } });
  const el = document.getElementById("discovery-banner");
  while (!el.querySelector(".apiservice")) await new Promise((r) => setTimeout(r, 10));
  const first = el.textContent;
  // Five seconds on: what the frames do each frame, with the frame's clock.
  now += 5000;
  const t0 = performance.now();
  for (let f = 1; f <= 300; f++) b.tick(t0 + f * 1000 / 60);
  return { first, later: el.textContent };
})()`
	got, err := chromedp.Run(ctx, chromedp.Evaluate[struct{ First, Later string }](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if !contains(got.First, "(30s ago)") || contains(got.First, "(35s ago)") {
		t.Fatalf("the banner first says %q; want (30s ago)", got.First)
	}
	if contains(got.Later, "(30s ago)") || !contains(got.Later, "(35s ago)") {
		t.Errorf("five seconds later the banner says %q; want (35s ago) for the failure and the APIService, and no (30s ago)", got.Later)
	}
	page.NoErrors(t)
}

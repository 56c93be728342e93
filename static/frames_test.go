package static

import (
	"slices"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gcscope/gcscope/server/wire"
)

// The page's reader has a handler for every type of frame of the stream's vocabulary
// (wire.FrameTypes, through frames.gen.js), and for no other.
func TestThePageHandlesEveryFrameType(t *testing.T) {
	_, ctx := modulePage(t)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
		Types    []wire.FrameType      `json:"types"`
		Reasons  []wire.SnapshotReason `json:"reasons"`
		Handlers []wire.FrameType      `json:"handlers"`
	}](`(async () => {
  const { FRAME_TYPES, SNAPSHOT_REASONS } = await import("/frames.gen.js");
  const { frameHandlers } = await import("/conn.js");
  return { types: FRAME_TYPES, reasons: SNAPSHOT_REASONS, handlers: Object.keys(frameHandlers(/** @type {any} */ ({}), /** @type {any} */ ({}))) };
})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Types, wire.FrameTypes()) || !slices.Equal(got.Reasons, wire.SnapshotReasons()) {
		t.Errorf("frames.gen.js lists %v and %v, wire %v and %v: run go generate ./static/", got.Types, got.Reasons, wire.FrameTypes(), wire.SnapshotReasons())
	}
	handled := slices.Sorted(slices.Values(got.Handlers))
	want := slices.Sorted(slices.Values(wire.FrameTypes()))
	if !slices.Equal(handled, want) {
		t.Errorf("conn.js handles frames %v; the vocabulary has %v", handled, want)
	}
}

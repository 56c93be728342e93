package static

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/gc/feedtest"
)

// probe runs in the page: for each sample event, a fresh Store holding the sample's
// object as it was before applies it; it says which types the store had no case for and
// whether the event changed what the store holds.
const probe = `(async (samples) => {
  const { Store } = await import("/store.js");
  const { EVENT_TYPES } = await import("/events.gen.js");
  const state = (s) => JSON.stringify({
    nodes: [...s.nodes.values()], dependents: [...s.dependents].map(([k, v]) => [k, [...v]]),
    queues: [...s.queues.values()].map((q) => ({ ...q, items: [...q.items.values()] })),
    actions: s.actions, sync: s.sync, shadowChanged: s.shadowChanged });
  const results = samples.map((e) => {
    const s = new Store();
    // The edge a removal takes away is there before.
    const owners = e.type === "edgeRemoved" ? [{ apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: "uid-owner" }] : [];
    s.applySnapshot({ seq: e.seq - 1, nodes: [{ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "sample",
      uid: "uid-sample", finalizers: ["before"], owners }] });
    const before = state(s);
    s.applyEvents([e]);
    return { type: e.type, unknown: [...s.unknownTypes], seq: s.seq, changed: state(s) !== before };
  });
  return { types: EVENT_TYPES, results };
})`

// The page's store has a case for every type of the feed's vocabulary, and each changes
// what it holds; a type it does not know is reported (Store.unknownTypes).
func TestStoreHandlesEveryEventType(t *testing.T) {
	page, ctx := modulePage(t)
	samples := []gc.Event{}
	for i, typ := range gc.EventTypes() {
		e, err := feedtest.Sample(typ, uint64(i+10))
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, e)
	}
	samples = append(samples, gc.Event{Seq: 99, Type: "noSuchType"})
	js, err := json.Marshal(samples)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		Type    gc.EventType   `json:"type"`
		Unknown []gc.EventType `json:"unknown"`
		Seq     uint64         `json:"seq"`
		Changed bool           `json:"changed"`
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
		Types   []gc.EventType `json:"types"`
		Results []result       `json:"results"`
	}](probe+"("+string(js)+")", chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Types, gc.EventTypes()) {
		t.Errorf("events.gen.js lists %v, gc.EventTypes() %v: run go generate ./static/", got.Types, gc.EventTypes())
	}
	for i, r := range got.Results {
		e := samples[i]
		if e.Type == "noSuchType" {
			if !slices.Equal(r.Unknown, []gc.EventType{e.Type}) {
				t.Errorf("the store applied an event of an unknown type without reporting it: %+v", r)
			}
			continue
		}
		if len(r.Unknown) > 0 || r.Seq != e.Seq || !r.Changed {
			t.Errorf("Store.applyEvents (store.js) of a %s event: unknown types %v, seq %d (want %d), changed %t (want true)",
				e.Type, r.Unknown, r.Seq, e.Seq, r.Changed)
		}
	}
	page.NoErrors(t)
}

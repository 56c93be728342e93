package static

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// pickerOption is one option of the cluster picker as the page drew it.
type pickerOption struct {
	Value, Text, Title string
	Disabled           bool
}

// TestThePickerShowsARefusedCluster: a hub's remote that does not accept the signed-in
// user's credential (state "refused" in /api/v1/clusters) is listed as refused with its
// reason, the other clusters keep their presentation and stay selectable, and the page of
// the refused cluster says so instead of waiting for it; once it accepts the user, the
// notice goes.
func TestThePickerShowsARefusedCluster(t *testing.T) {
	page, ctx := modulePage(t)
	js := `(async () => {
  document.body.innerHTML = '<header><select id="cluster-picker"><option value="east">east</option><option value="west" selected>west</option>' +
    '<option value="gone">gone</option><option value="new">new</option></select></header>' +
    '<div class="banner discovery-banner" id="discovery-banner" hidden></div><section id="graph-pane"></section>';
  document.body.dataset.cluster = "west";
  const { ClusterPicker } = await import("/clusters.js");
  const list = (west) => [
    { name: "east", server: "https://east.example", state: "ready", default: true },
    { name: "west", server: "https://west.example", ...west },
    { name: "gone", server: "https://gone.example", state: "failed", reason: "cannot reach https://gone.example: connection refused" },
    { name: "new", server: "https://new.example", state: "idle" },
  ];
  const refusedWest = { state: "refused", reason: "does not accept your credential: token not in --auth-token-file" };
  const options = () => [...document.querySelectorAll("#cluster-picker option")].map((o) => ({ value: o.value, text: o.textContent, title: o.title, disabled: o.disabled }));
  const p = new ClusterPicker();
  p.update(list(refusedWest));
  const refused = { options: options(), page: document.body.innerText };
  p.update(list({ state: "ready" }));
  const accepted = { options: options(), page: document.body.innerText };
  // Another cluster's page: west is refused in the picker, and this page is not concerned.
  document.body.dataset.cluster = "east";
  new ClusterPicker().update(list(refusedWest));
  const elsewhere = { options: options(), page: document.body.innerText };
  return { refused, accepted, elsewhere };
})()`
	type seen struct {
		Options []pickerOption
		Page    string
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[struct{ Refused, Accepted, Elsewhere seen }](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	byValue := func(s seen) map[string]pickerOption {
		m := map[string]pickerOption{}
		for _, o := range s.Options {
			m[o.Value] = o
		}
		return m
	}
	for name, s := range map[string]seen{"west's page": got.Refused, "east's page": got.Elsewhere} {
		o := byValue(s)
		if w := o["west"]; !strings.Contains(w.Text, "refused") || !strings.Contains(w.Title, "token not in --auth-token-file") {
			t.Errorf("%s: the refused cluster's option is %q (title %q); want it called refused, with the reason", name, w.Text, w.Title)
		}
		if e := o["east"]; e.Text != "east" || e.Disabled {
			t.Errorf("%s: the ready cluster's option is %+v; want its name alone, selectable", name, e)
		}
		if g := o["gone"]; g.Text != "gone (failed)" || !strings.Contains(g.Title, "connection refused") || g.Disabled {
			t.Errorf("%s: the failed cluster's option is %+v; want it as before: (failed), the reason in its title", name, g)
		}
		if n := o["new"]; n.Text != "new (not started)" || n.Disabled {
			t.Errorf("%s: the idle cluster's option is %+v; want it as before: (not started)", name, n)
		}
	}
	if want := "cluster west does not accept your credential: token not in --auth-token-file"; !strings.Contains(got.Refused.Page, want) {
		t.Errorf("the refused cluster's page says %q; want %q", got.Refused.Page, want)
	}
	if strings.Contains(got.Refused.Page, "connecting") {
		t.Errorf("the refused cluster's page says %q; want no \"connecting\"", got.Refused.Page)
	}
	if w := byValue(got.Accepted)["west"]; w.Text != "west" || strings.Contains(got.Accepted.Page, "does not accept") {
		t.Errorf("once west accepts the user, its option is %q and the page says %q; want its name alone and no refusal", w.Text, got.Accepted.Page)
	}
	if strings.Contains(got.Elsewhere.Page, "does not accept") {
		t.Errorf("east's page says %q; want no refusal (only west refuses)", got.Elsewhere.Page)
	}
	page.NoErrors(t)
}

// TestARefusedStreamDoesNotSignOut: a stream the hub closes with 4403 (the remote no longer
// accepts the user, who is still signed in to the hub) says so, links to no sign-in, and
// tries again slowly; a retry whose handshake is refused again (the browser sees 1006, the
// session answers 403) keeps saying so, with the session's reason. A stream closed with
// 1013 (the remote went away) says the cluster went away and retries as for a lost
// connection.
func TestARefusedStreamDoesNotSignOut(t *testing.T) {
	page, ctx := modulePage(t)
	js := `(async () => {
  document.body.innerHTML = '<header><form class="signout"><span id="signed-in-as">alice</span><button id="sign-out">Sign out</button></form></header><section id="graph-pane"></section>';
  document.body.dataset.cluster = "west";
  const socks = [];
  window.WebSocket = class { static OPEN = 1; constructor(url) { this.url = url; this.readyState = 0; socks.push(this); } close() {} send() {} };
  const fetched = [];
  window.fetch = async (u) => {
    fetched.push(String(u));
    return new Response(JSON.stringify({ error: "forbidden", message: 'cluster "west" does not accept your credential: token not in --auth-token-file' }),
      { status: 403, headers: { "Content-Type": "application/json" } });
  };
  // Timers are recorded, not run (a reconnection is the test's to make), but for the
  // offline note's moment (1 s), run now.
  const realTimeout = window.setTimeout.bind(window);
  const delays = [];
  window.setTimeout = (f, ms) => { delays.push(ms); return realTimeout(ms === 1000 ? f : () => {}, 0); };
  const settle = () => new Promise((r) => realTimeout(r, 50));
  const note = () => document.getElementById("offline-note");
  const seen = (states) => ({ note: note() && !note().hidden ? note().textContent : "", login: !!document.querySelector('a[href="/login"]'),
    path: location.pathname, state: states.at(-1) || "", retries: delays.filter((ms) => ms !== 1000) });
  const { Stream } = await import("/stream.js");
  // A stream is live once its first frame came (the hub accepts a socket before its remote answers).
  const live = (ws) => ws.onmessage({ data: JSON.stringify({ type: "pong" }) });

  const states = [];
  const s = new Stream({ onFrame() {}, onState: (st, w) => states.push(st + ": " + w), seq: () => 0 });
  s.open();
  live(socks[0]);
  socks[0].onclose({ code: 4403, reason: 'cluster "west" no longer accepts your credential: token revoked' });
  await settle();
  const refused = { ...seen(states), closed: s.closed };
  delays.length = 0;
  s.retry();
  socks[1].onclose({ code: 1006, reason: "" });
  await settle();
  const again = { ...seen(states), closed: s.closed, fetched };
  s.close();

  const states2 = [];
  delays.length = 0;
  const s2 = new Stream({ onFrame() {}, onState: (st, w) => states2.push(st + ": " + w), seq: () => 0 });
  s2.open();
  live(socks[2]);
  socks[2].onclose({ code: 1013, reason: 'cluster "west" went away: EOF' });
  await settle();
  const away = { ...seen(states2), closed: s2.closed };
  s2.close();
  return { refused, again, away };
})()`
	type seen struct {
		Note, Path, State string
		Login, Closed     bool
		Retries           []float64
		Fetched           []string
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[struct{ Refused, Again, Away seen }](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]seen{"4403": got.Refused, "then 1006 with the session's 403": got.Again} {
		if s.Login || s.Path != "/" || s.Closed || strings.Contains(s.Note, "Signed out") {
			t.Errorf("%s: a link to /login %v, at %q, stream closed %v, note %q; want the user kept signed in, the stream retrying", name, s.Login, s.Path, s.Closed, s.Note)
		}
		if len(s.Retries) != 1 || s.Retries[0] < 10000 {
			t.Errorf("%s: retries scheduled in %v ms; want one, 10 s or later", name, s.Retries)
		}
	}
	if want := "cluster west refuses your credential now: token revoked"; !strings.Contains(got.Refused.Note, want) {
		t.Errorf("after 4403 the note says %q; want %q", got.Refused.Note, want)
	}
	if want := "cluster west refuses your credential now: token not in --auth-token-file"; !strings.Contains(got.Again.Note, want) {
		t.Errorf("after a refused retry the note says %q (session asked: %v); want %q", got.Again.Note, got.Again.Fetched, want)
	}
	if !strings.Contains(got.Away.Note, `cluster "west" went away: EOF`) || strings.Contains(got.Away.Note, "connection to gcscope was lost") ||
		!strings.Contains(got.Away.Note, "Reconnecting") {
		t.Errorf("after 1013 the note says %q; want that the cluster went away (its reason), and reconnecting", got.Away.Note)
	}
	if len(got.Away.Retries) != 1 || got.Away.Retries[0] > 1000 || got.Away.Closed || !strings.HasPrefix(got.Away.State, "reconnecting") {
		t.Errorf("after 1013: retries %v ms, closed %v, state %q; want one retry soon, as for a lost connection", got.Away.Retries, got.Away.Closed, got.Away.State)
	}
	page.NoErrors(t)
}

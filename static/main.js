// @ts-check
// gcscope status page: follows the engine through /api/v1/stream (docs/stream.md) and
// keeps counters, queue states and the latest worker actions up to date. Reconnects
// with ?since= so nothing is missed while the hub still holds the events.

/** @typedef {{uid: string, kind: string, namespace?: string, name: string, virtual?: boolean, beingDeleted?: boolean}} Node */
/** @typedef {{queued?: boolean, inFlight?: boolean, backoff?: boolean}} Item */

const state = {
  /** @type {Map<string, Node>} */ nodes: new Map(),
  /** @type {Map<string, Map<string, Item>>} */ queues: new Map(),
  seq: 0,
};

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));

function resetQueues(/** @type {any[]} */ queues) {
  state.queues.clear();
  for (const q of queues || []) {
    const items = new Map();
    for (const it of q.items || []) {
      items.set(it.object.uid, { queued: !!it.queued, inFlight: !!it.inFlight, backoff: !!it.backoffUntil });
    }
    state.queues.set(q.name, items);
  }
}

function applyQueueEvent(/** @type {any} */ e) {
  let items = state.queues.get(e.queue);
  if (!items) state.queues.set(e.queue, (items = new Map()));
  const it = items.get(e.object.uid) || {};
  switch (e.op) {
    case "added": it.queued = true; it.backoff = false; break;
    case "addedAfter": it.backoff = true; break;
    case "taken": it.queued = false; it.inFlight = true; break;
    case "done": it.inFlight = false; break;
  }
  if (it.queued || it.inFlight || it.backoff) items.set(e.object.uid, it);
  else items.delete(e.object.uid);
}

function addAction(/** @type {any} */ a, /** @type {string} */ time) {
  if (a.verb === "get") return; // lookups are many; the decisions tell the story
  const li = document.createElement("li");
  const where = a.object.namespace ? `${a.object.namespace}/` : "";
  li.textContent = `${time ? time.slice(11, 23) : "earlier"} ${a.queue} ${a.verb}${a.policy ? " " + a.policy : ""} ` +
    `${a.object.kind} ${where}${a.object.name}${a.reason ? " — " + a.reason : ""}${a.error ? " — error: " + a.error : ""}`;
  if (a.error) li.className = "error";
  else if (a.shadow) li.className = "shadow";
  const list = $("actions");
  list.prepend(li);
  while (list.children.length > 30) list.lastElementChild?.remove();
}

function apply(/** @type {any} */ frame) {
  if (frame.type === "snapshot") {
    state.nodes.clear();
    for (const n of frame.nodes || []) state.nodes.set(n.uid, n);
    resetQueues(frame.queues);
    $("actions").replaceChildren();
    for (const q of frame.queues || []) for (const a of q.recent || []) addAction(a, "");
  } else if (frame.type === "deltas") {
    for (const e of frame.events || []) {
      if (e.type === "nodeAdded" || e.type === "nodeUpdated") state.nodes.set(e.node.uid, e.node);
      else if (e.type === "nodeRemoved") state.nodes.delete(e.node.uid);
      else if (e.type === "queue") applyQueueEvent(e.queue);
      else if (e.type === "action") addAction(e.action, e.time);
    }
  }
  if (frame.seq) state.seq = frame.seq;
}

let dirty = false;
function render() {
  dirty = false;
  let virtual = 0, deleting = 0;
  for (const n of state.nodes.values()) {
    if (n.virtual) virtual++;
    if (n.beingDeleted) deleting++;
  }
  $("nodes").textContent = String(state.nodes.size - virtual);
  $("virtual").textContent = String(virtual);
  $("deleting").textContent = String(deleting);
  $("seq").textContent = String(state.seq);
  for (const row of document.querySelectorAll("#queues tr[data-queue]")) {
    const items = state.queues.get(row.getAttribute("data-queue") || "") || new Map();
    let queued = 0, inFlight = 0, backoff = 0;
    for (const it of items.values()) {
      if (it.queued) queued++;
      if (it.inFlight) inFlight++;
      if (it.backoff) backoff++;
    }
    for (const [col, v] of [["queued", queued], ["inFlight", inFlight], ["backoff", backoff]]) {
      const cell = row.querySelector(`[data-col="${col}"]`);
      if (cell) cell.textContent = String(v);
    }
  }
}

function setConn(/** @type {string} */ s, /** @type {string} */ text) {
  const el = $("conn");
  el.dataset.state = s;
  el.textContent = text;
}

let retry = 500;
function connect() {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const since = state.seq ? `?since=${state.seq}` : "";
  const ws = new WebSocket(`${proto}//${location.host}/api/v1/stream${since}`);
  ws.onopen = () => { retry = 500; setConn("live", "live"); };
  ws.onmessage = (m) => {
    apply(JSON.parse(m.data));
    if (!dirty) { dirty = true; requestAnimationFrame(render); }
  };
  ws.onclose = (ev) => {
    setConn("down", `disconnected${ev.reason ? ": " + ev.reason : ""}; retrying`);
    setTimeout(connect, retry);
    retry = Math.min(retry * 2, 8000);
  };
}

connect();

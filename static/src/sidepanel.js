// @ts-check
// The side panel folds away, so that a narrow window gives the graph its whole width:
// › in its tabs hides it, ‹ by the zoom buttons brings it back. Remembered per browser.
// The graph's canvas follows its new size by itself (pointer.js observes it).

const KEY = "gcscope.sideHidden";

export function wireSidePanel() {
  const set = (/** @type {boolean} */ hidden) => {
    document.body.classList.toggle("side-hidden", hidden);
    try {
      localStorage.setItem(KEY, hidden ? "1" : "");
    } catch {
      // storage refused (a private window): it holds for this page only
    }
  };
  let stored = "";
  try {
    stored = localStorage.getItem(KEY) || "";
  } catch {
    // as above
  }
  if (stored) document.body.classList.add("side-hidden");
  document.getElementById("side-hide")?.addEventListener("click", () => set(true));
  document.getElementById("side-show")?.addEventListener("click", () => set(false));
}

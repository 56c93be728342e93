// @ts-check
// Light or dark: the system's, unless the user chose (remembered in localStorage) or the
// URL says (?theme=). The canvases read their colours again on each change.

import { $ } from "./dom.js";

/**
 * @param {{readColors: () => void, writeURL: () => void}} parts readColors: the canvases read their colours again;
 *   writeURL: the theme the user chose is in the URL when the URL named one
 */
export function wireTheme(parts) {
  const { readColors } = parts;
  /** @param {"light"|"dark"} t @param {boolean} remember */
  function setTheme(t, remember) {
    document.documentElement.dataset.theme = t;
    if (remember) localStorage.setItem("gcscope-theme", t);
    readColors();
  }
  function toggleTheme() {
    const cur = document.documentElement.dataset.theme || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
    setTheme(cur === "dark" ? "light" : "dark", true);
    parts.writeURL();
  }
  $("theme-toggle").addEventListener("click", toggleTheme);
  matchMedia("(prefers-color-scheme: dark)").addEventListener("change", readColors);
  const saved = localStorage.getItem("gcscope-theme");
  if (saved === "dark" || saved === "light") setTheme(saved, false);
  return { setTheme, toggleTheme };
}

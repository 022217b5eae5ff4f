// The console's only script, bundled by Bun with htmx (src/console/assets.ts): no inline script,
// no eval, so the Content-Security-Policy can say script-src 'self'.
import htmx from "htmx.org";

declare global {
  interface Window {
    htmx: typeof htmx;
  }
}
window.htmx = htmx;

/** Puts the keyboard focus on a page's error summary (or a freshly shown key) when there is one. */
function focusFirst(): void {
  const target = document.querySelector<HTMLElement>("[data-focus]");
  if (target) target.focus();
}

document.addEventListener("DOMContentLoaded", focusFirst);
document.body?.addEventListener("htmx:afterSettle", focusFirst);
document.addEventListener("htmx:load", () => focusFirst());

// Copy buttons: <button data-copy="#id"> copies that element's text.
document.addEventListener("click", (event) => {
  const button = (event.target as HTMLElement | null)?.closest<HTMLButtonElement>("button[data-copy]");
  if (!button) return;
  const source = document.querySelector(button.dataset.copy as string);
  if (!source) return;
  void navigator.clipboard?.writeText(source.textContent ?? "").then(
    () => {
      button.textContent = "Copied";
    },
    () => {
      button.textContent = "Select and copy";
    },
  );
});

// A file chosen for upload fills the document textarea (the form still posts the textarea).
document.addEventListener("change", (event) => {
  const input = event.target as HTMLInputElement | null;
  if (input?.type !== "file" || !input.dataset.fill) return;
  const file = input.files?.[0];
  const area = document.querySelector<HTMLTextAreaElement>(input.dataset.fill);
  if (!file || !area) return;
  void file.text().then((text) => {
    area.value = text;
    // The editor, when there is one, follows the textarea's input events.
    area.dispatchEvent(new Event("input"));
  });
});

// The document editor (CodeMirror, ~hundreds of KB) and the insight page's charts (uPlot) are
// scripts of their own: each loaded once, and only when a page has what asks for it, on a first
// load or after an htmx swap (a boosted link swaps the body only, never runs the new head's
// scripts). Each attaches itself, now and after every later swap.
const WANTED: readonly { readonly selector: string; readonly src: string }[] = [
  { selector: "textarea[data-editor]", src: "/console/assets/editor.js" },
  { selector: "table[data-chart]", src: "/console/assets/insight.js" },
];
function loadScriptsWhenWanted(): void {
  for (const { selector, src } of WANTED) {
    if (document.querySelector(selector) === null) continue;
    if (document.querySelector(`script[src="${src}"]`) !== null) continue;
    const script = document.createElement("script");
    script.src = src;
    document.head.append(script);
  }
}
document.addEventListener("DOMContentLoaded", loadScriptsWhenWanted);
document.addEventListener("htmx:load", loadScriptsWhenWanted);

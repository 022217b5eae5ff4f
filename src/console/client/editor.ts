// The documents page's editor: CodeMirror 6 over the page's textarea, bundled by Bun
// (src/console/assets.ts) and loaded by the console's script only where a textarea asks for it
// (`data-editor`). The textarea stays the form's field: the editor writes every change back to
// it, so the form posts what the author sees, and without script the page is the plain textarea.
//
// The CSP allows no inline style. CodeMirror puts its base theme in one <style> element
// (style-mod), which carries the page's style nonce (EditorView.cspNonce, read from the console
// stylesheet's <link nonce>); the token colours are classes (tok-*) styled in console.css.
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { json } from "@codemirror/lang-json";
import { bracketMatching, syntaxHighlighting } from "@codemirror/language";
import { type Diagnostic, linter, lintGutter } from "@codemirror/lint";
import { EditorState } from "@codemirror/state";
import { EditorView, highlightActiveLine, keymap, lineNumbers } from "@codemirror/view";
import { classHighlighter } from "@lezer/highlight";
import { checkDocumentText, type DocumentProblem } from "./document-check";

const attached = new WeakSet<HTMLTextAreaElement>();

/** The nonce of the page's style-src (the stylesheet link carries it; the first page's head stays under htmx). */
function styleNonce(): string | undefined {
  return document.querySelector<HTMLLinkElement>('link[rel="stylesheet"][nonce]')?.nonce || undefined;
}

/** The problems under the editor, in words, each a button that takes the cursor to it. */
function showProblems(list: HTMLElement, view: EditorView, problems: readonly DocumentProblem[]): void {
  const items = problems.map((p) => {
    const item = document.createElement("li");
    const go = document.createElement("button");
    go.type = "button";
    go.className = "link";
    const code = document.createElement("code");
    code.textContent = p.path;
    go.append(code);
    go.addEventListener("click", () => {
      view.dispatch({ selection: { anchor: p.from, head: p.to }, scrollIntoView: true });
      view.focus();
    });
    item.append(go, `: ${p.message}`);
    return item;
  });
  const title = document.createElement("p");
  title.textContent =
    problems.length === 0
      ? "No problems found as you type: a deploy runs the same checks."
      : `${problems.length} problem${problems.length === 1 ? "" : "s"} found as you type:`;
  if (items.length === 0) list.replaceChildren(title);
  else {
    const ul = document.createElement("ul");
    ul.append(...items);
    list.replaceChildren(title, ul);
  }
  list.classList.toggle("has-problems", problems.length > 0);
}

function attach(area: HTMLTextAreaElement): void {
  if (attached.has(area)) return;
  attached.add(area);
  const list = document.createElement("div");
  list.id = `${area.id}-problems`;
  list.className = "live-problems";
  list.setAttribute("role", "status");
  list.setAttribute("aria-live", "polite");
  const labelId = `${area.id}-label`;
  document.querySelector(`label[for="${area.id}"]`)?.setAttribute("id", labelId);

  let syncing = false;
  const nonce = styleNonce();
  const view = new EditorView({
    state: EditorState.create({
      doc: area.value,
      extensions: [
        lineNumbers(),
        highlightActiveLine(),
        history(),
        bracketMatching(),
        keymap.of([...defaultKeymap, ...historyKeymap]),
        json(),
        syntaxHighlighting(classHighlighter),
        lintGutter(),
        linter(
          (v): Diagnostic[] => {
            const problems = checkDocumentText(v.state.doc.toString());
            showProblems(list, v, problems);
            return problems.map((p) => ({
              from: p.from,
              to: p.to,
              severity: "error",
              message: `${p.path}: ${p.message}`,
            }));
          },
          { delay: 300 },
        ),
        ...(nonce ? [EditorView.cspNonce.of(nonce)] : []),
        // Through the facet: CodeMirror rewrites the editor's class attribute on updates.
        EditorView.editorAttributes.of({ class: "document-editor" }),
        EditorView.contentAttributes.of({
          "aria-labelledby": labelId,
          "aria-describedby": list.id,
          "aria-multiline": "true",
        }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged && !syncing) area.value = update.state.doc.toString();
        }),
      ],
    }),
  });
  area.after(view.dom, list);
  area.classList.add("enhanced");
  // A file chosen for upload fills the textarea (client/console.ts): the editor follows.
  area.addEventListener("input", () => {
    if (area.value === view.state.doc.toString()) return;
    syncing = true;
    view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: area.value } });
    syncing = false;
  });
}

function attachAll(): void {
  for (const area of document.querySelectorAll<HTMLTextAreaElement>("textarea[data-editor]")) attach(area);
}

attachAll();
document.addEventListener("htmx:load", attachAll);

// Model View's code: the record's SML text in CodeMirror 6 (YAML mode). Problems from the
// worker are shown in place as lint diagnostics at their line:col. setText applies only
// the changed middle of the text, so the cursor and scroll survive a form or graph edit.
import { EditorState } from "@codemirror/state";
import { EditorView, keymap, lineNumbers, highlightActiveLine, drawSelection } from "@codemirror/view";
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { syntaxHighlighting, defaultHighlightStyle, indentOnInput } from "@codemirror/language";
import { yaml } from "@codemirror/lang-yaml";
import { lintGutter, setDiagnostics } from "@codemirror/lint";

export function createCode(el, { onChange }) {
  let quiet = false; // true while the text is set from outside: no onChange echo
  const view = new EditorView({
    parent: el,
    state: EditorState.create({
      doc: "",
      extensions: [
        lineNumbers(), history(), drawSelection(), highlightActiveLine(), indentOnInput(),
        syntaxHighlighting(defaultHighlightStyle, { fallback: true }), yaml(), lintGutter(),
        keymap.of([...defaultKeymap, ...historyKeymap]), EditorView.lineWrapping,
        EditorView.updateListener.of((u) => {
          if (u.docChanged && !quiet) onChange(u.state.doc.toString());
        }),
        EditorView.theme({ "&": { height: "100%" }, ".cm-scroller": { fontFamily: "ui-monospace, SFMono-Regular, Menlo, monospace", fontSize: "12.5px" } }),
      ],
    }),
  });

  function setText(text) {
    const old = view.state.doc.toString();
    if (old === text) return;
    let a = 0;
    while (a < old.length && a < text.length && old[a] === text[a]) a++;
    let b = 0;
    while (b < old.length - a && b < text.length - a && old[old.length - 1 - b] === text[text.length - 1 - b]) b++;
    quiet = true;
    try {
      view.dispatch({ changes: { from: a, to: old.length - b, insert: text.slice(a, text.length - b) } });
    } finally { quiet = false; }
  }

  function showDiagnostics(diags) {
    const doc = view.state.doc;
    const items = diags.map((d) => {
      const line = doc.line(Math.min(Math.max(d.line, 1), doc.lines));
      const from = Math.min(line.from + Math.max(d.col - 1, 0), line.to);
      // mark from the column to the end of the token (at least one character)
      const rest = doc.sliceString(from, line.to);
      const m = rest.match(/^[^\s,}\]]+/);
      const to = Math.min(from + (m ? m[0].length : 1), doc.length);
      return { from, to: Math.max(to, from), severity: "error",
        message: `${d.line}:${d.col}: ${d.message}${d.fix ? ` (${d.fix})` : ""}` };
    });
    view.dispatch(setDiagnostics(view.state, items));
  }

  function goto(line, col) {
    const doc = view.state.doc;
    const l = doc.line(Math.min(Math.max(line, 1), doc.lines));
    const pos = Math.min(l.from + Math.max(col - 1, 0), l.to);
    view.dispatch({ selection: { anchor: pos }, scrollIntoView: true });
    view.focus();
  }

  return { view, setText, showDiagnostics, goto, get text() { return view.state.doc.toString(); } };
}

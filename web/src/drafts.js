// Drafts: the record being edited survives a reload. Each example's edited text is kept
// in localStorage under its name; loading that example again brings the draft back, with
// a note in the start strip that says so and offers to discard it (back to the example's
// own text). A record equal to the example's own text is no draft: its key is removed.
// An imported model's record is kept too (its weights are an object of the run store,
// which IndexedDB keeps): when it was the record shown last, the page opens on it.
// A pinned data file the record names is kept by the worker (webapp/kept_data.py).
const PREFIX = "scellis-draft:";
const IMPORTED = `${PREFIX}imported`;
const LAST = "scellis-last-record";
const IMPORTED_PREFIX = "imported:";

export function createDrafts(app, note, storage = window.localStorage) {
  const origins = new Map(); // example name -> its own text, as fetched
  const state = { restored: null };
  app.drafts = state;

  const key = (name) => PREFIX + name;
  function read(name) {
    try { return JSON.parse(storage.getItem(key(name)) || "null"); } catch (e) { return null; }
  }

  // keep app.record as the draft of the example it came from, or of the imported model
  function save() {
    const name = app.recordName;
    const imported = name.startsWith(IMPORTED_PREFIX);
    if ((!origins.has(name) && !imported) || !app.record) return;
    try {
      storage.setItem(LAST, name);
      if (imported) {
        const kept = JSON.parse(storage.getItem(IMPORTED) || "null");
        if (kept && kept.text === app.record) return; // as kept: its time stays
        const draft = { text: app.record, name: name.slice(IMPORTED_PREFIX.length), saved: Date.now() };
        storage.setItem(IMPORTED, JSON.stringify(draft));
      } else if (app.record === origins.get(name)) storage.removeItem(key(name));
      else storage.setItem(key(name), JSON.stringify({ text: app.record, saved: Date.now() }));
    } catch (e) {
      // storage full or refused (a private window): the draft lasts this page only
    }
  }

  function showNote(words, title, onDiscard) {
    note.hidden = false;
    note.innerHTML = "";
    const text = document.createElement("span");
    text.textContent = `${words} · `;
    const discard = document.createElement("button");
    discard.type = "button";
    discard.className = "draft-discard";
    discard.textContent = "discard";
    discard.title = title;
    discard.addEventListener("click", () => { hideNote(); onDiscard(); });
    note.append(text, discard);
  }
  const when = (saved) => new Date(saved).toLocaleString();

  function showExampleNote(name, saved) {
    showNote(`restored your draft of ${name} (edited ${when(saved)})`,
      "drop the edits and go back to the example's own record", () => {
        storage.removeItem(key(name));
        app.record = origins.get(name);
        app.emit("record", app.record);
      });
  }

  // the imported model shown last, as it was left: its text (app.recordName set), or
  // null; its discard forgets it and calls back (the page shows an example instead)
  function openImported(onDiscard) {
    let last = null, draft = null;
    try {
      last = storage.getItem(LAST);
      draft = JSON.parse(storage.getItem(IMPORTED) || "null");
    } catch (e) { return null; }
    if (!last || !last.startsWith(IMPORTED_PREFIX) || !draft || typeof draft.text !== "string") return null;
    app.recordName = IMPORTED_PREFIX + draft.name;
    state.restored = app.recordName;
    showNote(`restored your imported model ${draft.name} (as you left it ${when(draft.saved)})`,
      "forget the imported model and show an example", () => {
        storage.removeItem(IMPORTED);
        storage.removeItem(LAST);
        onDiscard();
      });
    return draft.text;
  }

  function hideNote() {
    note.hidden = true;
    note.innerHTML = "";
    state.restored = null;
  }

  // the text to load for example `name` whose own text is `text`: its draft if it has one
  function open(name, text) {
    origins.set(name, text);
    const draft = read(name);
    if (draft && typeof draft.text === "string" && draft.text !== text) {
      state.restored = name;
      showExampleNote(name, draft.saved);
      return draft.text;
    }
    hideNote();
    return text;
  }

  app.on("record", save);
  app.on("model-view", save); // typed code reaches app.record without a "record" event
  return { open, openImported };
}

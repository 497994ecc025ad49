// Drafts: the record being edited survives a reload. Each example's edited text is kept
// in localStorage under its name; loading that example again brings the draft back, with
// a note in the start strip that says so and offers to discard it (back to the example's
// own text). A record equal to the example's own text is no draft: its key is removed.
const PREFIX = "scellis-draft:";

export function createDrafts(app, note, storage = window.localStorage) {
  const origins = new Map(); // example name -> its own text, as fetched
  const state = { restored: null };
  app.drafts = state;

  const key = (name) => PREFIX + name;
  function read(name) {
    try { return JSON.parse(storage.getItem(key(name)) || "null"); } catch (e) { return null; }
  }

  // keep app.record as the draft of the example it came from (nothing for other records)
  function save() {
    const name = app.recordName;
    if (!origins.has(name) || !app.record) return;
    try {
      if (app.record === origins.get(name)) storage.removeItem(key(name));
      else storage.setItem(key(name), JSON.stringify({ text: app.record, saved: Date.now() }));
    } catch (e) {
      // storage full or refused (a private window): the draft lasts this page only
    }
  }

  function showNote(name, saved) {
    note.hidden = false;
    note.innerHTML = "";
    const when = new Date(saved).toLocaleString();
    const text = document.createElement("span");
    text.textContent = `restored your draft of ${name} (edited ${when}) · `;
    const discard = document.createElement("button");
    discard.type = "button";
    discard.className = "draft-discard";
    discard.textContent = "discard";
    discard.title = "drop the edits and go back to the example's own record";
    discard.addEventListener("click", () => {
      storage.removeItem(key(name));
      hideNote();
      app.record = origins.get(name);
      app.emit("record", app.record);
    });
    note.append(text, discard);
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
      showNote(name, draft.saved);
      return draft.text;
    }
    hideNote();
    return text;
  }

  app.on("record", save);
  app.on("model-view", save); // typed code reaches app.record without a "record" event
  return { open };
}

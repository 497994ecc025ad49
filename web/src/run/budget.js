// The GPU memory budget. WebGPU tells a page nothing about how much memory the GPU has,
// so the engine holds a plan to a declared 4 GiB unless the user says what theirs holds.
// What they type is read by the engine (webapp/budget.py: the parser the CLI's --budget
// uses), so "8 GiB", "8GiB" and "8.5GB" mean what they mean there; it is kept in
// localStorage for the next visit (and for a detached run's window, on the same origin),
// and app.budgetArgs() hands it to every command that plans or trains.
const KEY = "scellis.budget";
const DECLARED = "4 GiB";

export const BUDGET_HTML = `
  <div id="run-budget-row" class="run-budget">
    <label for="run-budget">GPU memory budget</label>
    <input id="run-budget" type="text" size="9" spellcheck="false" autocomplete="off"
      placeholder="${DECLARED}" aria-describedby="run-budget-note run-budget-error">
    <span id="run-budget-note" class="muted"></span>
    <span id="run-budget-error" class="budget-error" role="alert" hidden></span>
  </div>`;

function load(storage) {
  try { return storage.getItem(KEY) || null; } catch (e) { return null; }
}

function save(storage, text) {
  try {
    if (text) storage.setItem(KEY, text); else storage.removeItem(KEY);
  } catch (e) { /* storage refused (a private window): the budget holds for this page only */ }
}

// $: element by id; onChange(): the budget the plan is held to changed
export function mountBudget({ $, client, app, onChange, storage = window.localStorage }) {
  const input = $("run-budget"), note = $("run-budget-note"), error = $("run-budget-error");
  let text = load(storage);
  app.budget = text;
  app.budgetArgs = () => (app.budget ? { budget: app.budget } : {});
  input.value = text || "";

  function describe() {
    note.textContent = app.budget
      ? "set in this tab: plans and runs are held to it (clear it for the declared 4 GiB)"
      : `WebGPU does not say how much memory this GPU has: plans assume ${DECLARED}; type what yours holds`;
  }

  function refuse(message) {
    error.hidden = false;
    error.textContent = message;
    input.setAttribute("aria-invalid", "true");
  }

  // the typed text, read by the engine: a size is kept and planned with; anything else is
  // one line beside the box, and the budget in force stays as it was
  async function apply() {
    const typed = input.value.trim();
    let got;
    try {
      got = await client.call("parse_budget", { text: typed });
    } catch (e) {
      // a kept budget that no longer reads gives way to the declared one, said here
      const kept = typed === app.budget;
      if (kept) { app.budget = null; save(storage, null); describe(); onChange(); }
      refuse(`${e.message}; the plan keeps ${app.budget || `the declared ${DECLARED}`}`);
      return;
    }
    error.hidden = true;
    input.removeAttribute("aria-invalid");
    text = got.text;
    input.value = text || "";
    save(storage, text);
    if (text === app.budget) return;
    app.budget = text;
    describe();
    onChange();
  }

  input.addEventListener("change", () => apply());
  // a budget kept from an earlier visit is read again once the engine is up: one that no
  // longer reads as a size is said, and the declared budget holds
  app.on("engine", () => { if (app.budget) apply(); });
  describe();
  return { apply, focus: () => input.focus() };
}

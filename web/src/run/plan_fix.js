// The plan box's fix buttons: a remediation the planner planned is applied as it says,
// its `set` as one record edit (the edit Model View's form sends, through the worker's
// model_api.edit, so comments and layout survive), its `option` in the run options
// box. The changed record or option re-plans (live_plan.js), showing the verdict the
// fix promised.
import { clearBanner } from "../banner.js";
import { controlId } from "./options.js";

export function createFixer({ client, app, $, replan, log }) {
  function setOption(name, value) {
    const input = $(controlId(name));
    if (!input) throw new Error(`the run options have no ${name}`);
    if (input.type === "checkbox") input.checked = Boolean(value);
    else input.value = value == null ? "" : String(value);
    // an option among "more run options" is shown changed, not changed out of sight
    const folded = input.closest("details");
    if (folded) folded.open = true;
  }

  async function editRecord(set) {
    const edit = { kind: "set_paths", set };
    const mv = app.modelView;
    // through Model View when it is there, so its three views show the edit too
    if (mv && mv.send) return Boolean(await mv.send(edit, "plan_fix"));
    const r = await client.call("edit", { text: app.record, edit });
    app.record = r.text;
    app.emit("record", r.text);
    return true;
  }

  return async function applyFix(r) {
    try {
      for (const [name, value] of Object.entries(r.option || {})) setOption(name, value);
      const set = r.set || {};
      if (Object.keys(set).length) {
        if (!(await editRecord(set))) throw new Error(app.modelView?.lastError || "the edit was refused");
      } else {
        replan(); // an option alone leaves the record as it was
      }
      // the banner of a refused run pointed at this plan: what it said no longer holds
      clearBanner("run-error");
      log(`applied the plan's fix: ${r.fix}`);
    } catch (e) {
      log(`could not apply "${r.fix}": ${e.message}`);
      replan(); // the buttons come back with the plan as it is
    }
  };
}

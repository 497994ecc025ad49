// The fine-tune choice beside Import model: train every weight, or LoRA adapters over a
// frozen base, kept in f32 or stored 4-bit (QLoRA, NF4) or 8-bit. The choice is an edit
// of the record (Model View's "finetune" edit, webapp/finetune_edit.py), so the code view
// shows the finetune: section it wrote and the memory plan counts what it stores; the
// control shows what the record says (Model View's projection), whoever wrote it.
const TEMPLATE = `
  <label class="ft-label">Fine-tune
    <select class="ft-method" aria-label="how to fine-tune the model">
      <option value="full">every weight</option>
      <option value="lora">LoRA adapters (base frozen, f32)</option>
      <option value="qlora">QLoRA: LoRA on a 4-bit NF4 base</option>
      <option value="qlora-int8">QLoRA: LoRA on an 8-bit base</option>
      <option value="custom" disabled>as the record's finetune: section says</option>
    </select></label>
  <label class="ft-rank-label">rank <input class="ft-rank" type="number" min="1" max="256" step="1" value="8"
    aria-label="LoRA rank"></label>
  <span class="ft-note muted" role="status"></span>
`;

const NOTES = {
  full: "every weight trains (the most memory: weights, gradients and optimizer state)",
  lora: "only the adapters train; the base stays f32",
  qlora: "only the adapters train; the frozen base is stored as 4-bit codes (about 1/7 of f32), see the memory plan",
  "qlora-int8": "only the adapters train; the frozen base is stored as 8-bit codes (1/4 of f32), see the memory plan",
  custom: "edit it in Model View's code",
};

export function mountFinetune(slot, app) {
  const box = document.createElement("div");
  box.className = "import-finetune";
  box.hidden = true;
  box.innerHTML = TEMPLATE;
  slot.appendChild(box);
  const $ = (sel) => box.querySelector(sel);
  const state = { shown: null };
  app.finetune = state; // tests read and drive the choice here

  function show(choice) {
    state.shown = choice;
    $(".ft-method").value = choice.method;
    $(".ft-rank").value = choice.rank;
    $(".ft-rank-label").hidden = choice.method === "full" || choice.method === "custom";
    $(".ft-note").textContent = NOTES[choice.method] || "";
  }

  async function choose(method, rank) {
    const mv = app.modelView;
    if (!mv || !mv.send) return null;
    return mv.send({ kind: "finetune", method, rank: Math.round(Number(rank)) }, "form");
  }
  state.choose = choose;

  $(".ft-method").addEventListener("change", () => choose($(".ft-method").value, $(".ft-rank").value));
  $(".ft-rank").addEventListener("change", () => {
    const rank = Number($(".ft-rank").value);
    if (Number.isInteger(rank) && rank >= 1 && rank <= 256) choose($(".ft-method").value, rank);
    else $(".ft-note").textContent = "the rank is a whole number from 1 to 256";
  });

  // shown for a model the user brought (adapters on a model trained from scratch would
  // adapt random weights); it follows every projection of the record
  app.on("model-view", (r) => {
    const mine = app.recordName.startsWith("imported:");
    box.hidden = !mine || !r.parsed || !r.finetune;
    if (!box.hidden) show(r.finetune);
  });
  return state;
}

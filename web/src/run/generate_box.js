// The generation box of a trained language model: prompt, temperature, top-k, top-p, length
// (new tokens, capped) and seed go to the engine's generator (run/generate.py, the one
// `scellis generate` uses); its text arrives token by token, and Stop ends it before
// the next token.
import { STORE } from "./runs.js";

export const MAX_NEW = 2000; // the engine's cap (webapp.run_api.MAX_NEW_CAP)

const TEMPLATE = `
  <label class="gen-prompt-label" for="gen-prompt">prompt</label>
  <textarea id="gen-prompt" rows="2" spellcheck="false"></textarea>
  <div class="use-controls">
    <label class="run-opt">temperature <input id="gen-temperature" type="number" min="0" step="0.1" value="0.8"></label>
    <label class="run-opt">top-k <input id="gen-top-k" type="number" min="0" step="1" value="0" title="0 keeps every token"></label>
    <label class="run-opt">top-p <input id="gen-top-p" type="number" min="0" max="1" step="0.05" value="1" title="keeps the likeliest tokens whose probabilities add up to p (1 keeps every token)"></label>
    <label class="run-opt">length (tokens) <input id="gen-length" type="number" min="1" max="${MAX_NEW}" step="1" value="200" title="new tokens, at most ${MAX_NEW}"></label>
    <label class="run-opt">seed <input id="gen-seed" type="number" min="0" step="1" value="0"></label>
    <button id="gen-go">Generate</button>
    <button id="gen-stop" disabled>Stop</button>
  </div>
  <div class="muted gen-help">temperature 0 picks the likeliest token each time; top-k 0 keeps every token; top-p keeps the likeliest tokens whose probabilities add up to p (1: every token)</div>
  <pre id="gen-output" class="sample-text" aria-live="polite" hidden><span class="prompt"></span><span class="generated"></span></pre>`;

// the box's fields as the engine's generate takes them, or an error text
function readFields($) {
  const num = (id) => Number($(id).value);
  const length = num("gen-length"), topK = num("gen-top-k"), temperature = num("gen-temperature");
  const seed = num("gen-seed"), topP = num("gen-top-p");
  if (!$("gen-prompt").value) return "write a prompt for the model to continue";
  if (!(temperature >= 0)) return "temperature must be a number >= 0";
  if (!Number.isInteger(topK) || topK < 0) return "top-k must be a whole number >= 0 (0: every token)";
  // an empty field reads 0: out of (0, 1] like any other bad value
  if (!(topP > 0 && topP <= 1)) return "top-p must be a number above 0 and at most 1 (1: every token)";
  if (!Number.isInteger(length) || length < 1 || length > MAX_NEW) return `length must be a whole number from 1 to ${MAX_NEW}`;
  if (!Number.isInteger(seed) || seed < 0) return "seed must be a whole number >= 0";
  return { prompt: $("gen-prompt").value, temperature, top_k: topK || null, top_p: topP < 1 ? topP : null, max_new: length, seed };
}

export function mountGenerateBox(el, client, { message, state }) {
  el.innerHTML = TEMPLATE;
  const $ = (id) => el.querySelector(`#${id}`);
  const box = { running: null, setBusy };

  function setBusy(busy) {
    $("gen-go").disabled = busy || box.running !== null;
  }

  function show(info) {
    if (!$("gen-prompt").value && info.prompt) $("gen-prompt").value = info.prompt;
  }

  async function go() {
    const args = readFields($);
    if (typeof args === "string") { message(args, "error"); return null; }
    message("");
    const out = $("gen-output");
    out.hidden = false;
    out.querySelector(".prompt").textContent = args.prompt;
    const gen = out.querySelector(".generated");
    gen.textContent = "";
    $("gen-go").disabled = true;
    $("gen-stop").disabled = false;
    const t0 = performance.now();
    const job = client.stream("generate", { run: state.run, store: STORE, ...args }, (ev) => {
      if (ev.kind === "token") gen.textContent += ev.text;
    });
    box.running = job;
    try {
      const end = await job;
      gen.textContent = end.generated; // the whole continuation, decoded as one text
      const how = end.stopped ? "stopped after" : "generated";
      message(`${how} ${end.ids.length} tokens in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      box.last = end;
      return end;
    } catch (e) {
      message(`generation failed: ${e.message}`, "error");
      return null;
    } finally {
      box.running = null;
      $("gen-go").disabled = state.busy;
      $("gen-stop").disabled = true;
    }
  }

  function stop() {
    if (box.running) client.control({ stop_generation: true });
  }

  $("gen-go").addEventListener("click", () => { go(); });
  $("gen-stop").addEventListener("click", stop);
  Object.assign(box, { go, stop, show });
  return box;
}

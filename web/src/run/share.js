// Run links: "Link" in the runs list makes one (the tab's address with the run's record,
// dataset hash, seed, tier and first losses in the fragment: scellis.run.share, the same
// as `scellis share RUN`); a page opened on such a link loads the record, asks for the
// data file unless it is bundled (its hash is checked before anything trains), trains it
// on the link's tier for the link's steps, and says whether the losses match bit for bit.
// The box's data-state tells tests where it is: asking, ready, running, done, failed.
import { STORE } from "./runs.js";

const PREFIX = "#repro=";

function base64Of(u8) {
  let bin = "";
  for (let i = 0; i < u8.length; i += 0x8000) bin += String.fromCharCode(...u8.subarray(i, i + 0x8000));
  return btoa(bin);
}

// the example picker names what Model View holds (a disabled entry, as an import's),
// gone once the user picks an example again
function markPicker(label) {
  const picker = document.getElementById("run-example");
  if (!picker) return;
  const opt = new Option(label, "", true, true);
  opt.disabled = true;
  opt.dataset.shared = "1";
  picker.add(opt, 0);
  picker.value = "";
  opt.selected = true;
  picker.addEventListener("change", () => opt.remove(), { once: true });
}

export function createShare({ client, app, run, box, message }) {
  const share = { link: null, info: null, verdict: null };
  const say = (text, stateName) => {
    box.querySelector(".share-text").textContent = text;
    if (stateName) box.dataset.state = stateName;
  };

  // the link of a stored run, shown (selectable) and put on the clipboard where allowed
  async function copy(id) {
    const site = location.origin + location.pathname;
    let link;
    try {
      link = await client.call("share_link", { run: id, site, store: STORE });
    } catch (e) {
      message(`no link for run ${id}: ${e.message}`, "error");
      return null;
    }
    let copied = false;
    try {
      await navigator.clipboard.writeText(link);
      copied = true;
    } catch (e) {
      // no clipboard permission (an embedded or headless page): the field still holds it
    }
    message(copied ? `link to run ${id} copied (${link.length} characters)`
      : `link to run ${id}: select it below and copy`, "ok");
    const field = document.getElementById("runs-link");
    field.hidden = false;
    field.value = link;
    field.dataset.run = id;
    share.link = link;
    return link;
  }

  async function reproduce() {
    const info = share.info;
    say(`reproducing ${info.run ? `run ${info.run}` : "the shared run"}: ${info.losses.length} ` +
      `steps on the ${info.tier} tier…`, "running");
    let events;
    try {
      // no samples at the end: they change no loss, and the verdict should come soon
      await run.train({ record_text: info.record_text, tier: info.tier, samples: false, ...info.options });
      events = run.events;
    } catch (e) {
      say(`the shared run did not train: ${e.message}`, "failed");
      return null;
    }
    const losses = events.filter((e) => e.kind === "log").map((e) => [e.step, e.loss]);
    const v = await client.call("link_match", { link: share.link, losses });
    share.verdict = v;
    // bit for bit is promised on debug, on the device the run used
    const device = v.device ? `; the link's run was on ${v.device}` : "";
    say(v.bitwise
      ? `reproduced: all ${v.steps} losses match the link bit for bit (${v.tier} tier)`
      : `reproduced, but the losses differ from step ${v.first_difference} (largest relative ` +
        `difference ${v.max_relative_difference.toPrecision(3)}, ${v.tier} tier${device})`, "done");
    box.dataset.bitwise = String(v.bitwise);
    return v;
  }

  // the data file the link's run trained on, picked by the user, checked, then trained
  async function pickData(file) {
    say(`checking ${file.name}…`, "asking");
    try {
      const data = base64Of(new Uint8Array(await file.arrayBuffer()));
      await client.call("link_data", { link: share.link, data });
    } catch (e) {
      say(`${file.name} is not the run's data: ${e.message}`, "asking");
      return null;
    }
    box.querySelector(".share-data").hidden = true;
    return reproduce();
  }

  // a page opened on a link: once the engine is up, load and reproduce it
  async function open(hash = location.hash) {
    if (!hash.startsWith(PREFIX)) return null;
    share.link = location.origin + location.pathname + hash;
    box.hidden = false;
    say("reading the shared run…", "reading");
    try {
      share.info = await client.call("open_link", { link: share.link });
    } catch (e) {
      say(`this link cannot be opened: ${e.message}`, "failed");
      return null;
    }
    const info = share.info;
    markPicker(`shared run${info.run ? ` ${info.run}` : ""}`);
    app.recordName = "shared run";
    app.record = info.record_text;
    app.emit("record", app.record);
    if (!info.file) return reproduce();
    const ds = info.dataset ? ` (dataset ${info.dataset.slice(0, 12)})` : "";
    say(`this run trained on ${info.file}${ds}, which is not bundled: choose that file to reproduce it`, "asking");
    box.querySelector(".share-data").hidden = false;
    return null;
  }

  box.innerHTML = `<span class="share-text"></span>
    <label class="share-data" hidden>data file <input type="file" id="share-file"></label>`;
  box.querySelector("#share-file").addEventListener("change", (ev) => {
    const f = ev.target.files[0];
    if (f) pickData(f);
  });
  Object.assign(share, { copy, open, reproduce });
  return share;
}

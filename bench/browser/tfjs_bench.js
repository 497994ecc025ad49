// The TensorFlow.js side of bench/browser_train_step.py: the same models, batch and
// optimizer as the Scellis side; one step = forward + loss + backward + Adam update.
// LSTMs (MSE) are built here with tf.layers; Transformers (cfg.kind "tf", cross-entropy)
// in tfjs_transformer.js.
// Timing: `steps` steps, then one loss readback (as Scellis reads at log points).

function lcg(seed) {  // a small deterministic generator, so every backend sees the same data
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296 - 0.5;
  };
}

function buildModel(cfg) {
  const m = tf.sequential();
  for (let i = 0; i < cfg.layers; i++) {
    const opts = { units: cfg.hidden, returnSequences: i < cfg.layers - 1 };
    if (i === 0) opts.inputShape = [cfg.T, 1];
    m.add(tf.layers.lstm(opts));
  }
  m.add(tf.layers.dense({ units: 1 }));
  return m;
}

function buildLstmStep(cfg, r) {
  const n = cfg.batch * cfg.T;
  const x = tf.tensor3d(Float32Array.from({ length: n }, r), [cfg.batch, cfg.T, 1]);
  const y = tf.tensor2d(Float32Array.from({ length: cfg.batch }, r), [cfg.batch, 1]);
  const model = buildModel(cfg);
  const opt = tf.train.adam(cfg.lr);
  const step = () => opt.minimize(() => tf.losses.meanSquaredError(y, model.apply(x)), true);
  return { step, params: model.countParams() };
}

async function tfjsBench(backend, cfg, steps, repeats) {
  if (backend === "wasm") tf.wasm.setWasmPaths("node_modules/@tensorflow/tfjs-backend-wasm/dist/");
  const t0 = performance.now();
  const ok = await tf.setBackend(backend);
  if (!ok) return { backend, error: `tf.js could not start its ${backend} backend` };
  await tf.ready();
  const r = lcg(7);
  const { step, params } = cfg.kind === "tf" ? buildTransformerStep(cfg, r) : buildLstmStep(cfg, r);
  let loss = step();
  const first = await loss.data();
  loss.dispose();
  const firstStepMs = performance.now() - t0;
  const firstStepDone = performance.now(); // ms since the page's navigation start
  const times = [];
  for (let k = 0; k < repeats; k++) {
    const s = performance.now();
    for (let i = 0; i < steps; i++) {
      loss = step();
      if (i < steps - 1) loss.dispose();
    }
    await loss.data();
    loss.dispose();
    times.push((performance.now() - s) / steps);
  }
  times.sort((a, b) => a - b);
  return {
    backend: tf.getBackend(),
    first_step_ms: firstStepMs,
    ms_per_step: times[Math.floor(times.length / 2)],
    first_loss: first[0],
    first_step_done_ms: firstStepDone,
    params,
  };
}
window.tfjsBench = tfjsBench;

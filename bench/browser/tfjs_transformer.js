// The TensorFlow.js side of the Transformer workloads (char_tf, tf_d384): the decoder the
// engine trains (scellis.model.zoo.CharTransformer) written with tf ops, since tf.layers
// has no multi-head attention. Token embedding + learned positions, `layers` pre-norm
// blocks (causal multi-head attention with q/k/v/o biases, GELU (erf) 4x MLP), a final
// layer norm and an untied head without bias; mean cross-entropy over every position.
// Parameter shapes are the engine's one for one, so the counts are equal.

function tfParams(cfg, rand) {
  const { vocab: V, T, d } = cfg;
  const vars = {};
  const add = (name, shape, init) => {
    const n = shape.reduce((a, b) => a * b, 1);
    const data = Float32Array.from({ length: n }, init);
    vars[name] = tf.variable(tf.tensor(data, shape), true, name);
  };
  const uni = (bound) => () => 2 * bound * rand();  // rand() is uniform on [-0.5, 0.5)
  const zero = () => 0, one = () => 1;
  add("tok", [V, d], uni(0.05));
  add("pos", [T, d], uni(0.035));
  for (let l = 0; l < cfg.layers; l++) {
    const p = `b${l}.`;
    add(p + "ln1.g", [d], one); add(p + "ln1.b", [d], zero);
    for (const w of ["q", "k", "v", "o"]) {
      add(p + w + ".w", [d, d], uni(Math.sqrt(3 / d)));
      add(p + w + ".b", [d], zero);
    }
    add(p + "ln2.g", [d], one); add(p + "ln2.b", [d], zero);
    add(p + "fc1.w", [d, 4 * d], uni(1 / Math.sqrt(d)));
    add(p + "fc1.b", [4 * d], uni(1 / Math.sqrt(d)));
    add(p + "fc2.w", [4 * d, d], uni(1 / Math.sqrt(4 * d)));
    add(p + "fc2.b", [d], uni(1 / Math.sqrt(4 * d)));
  }
  add("lnf.g", [d], one); add("lnf.b", [d], zero);
  add("head", [d, V], uni(1 / Math.sqrt(d)));
  return vars;
}

function layerNorm(x, g, b) {  // over the last axis, eps 1e-5 (the engine's default)
  const { mean, variance } = tf.moments(x, -1, true);
  return x.sub(mean).mul(tf.rsqrt(variance.add(1e-5))).mul(g).add(b);
}

function gelu(x) {  // exact GELU, as the engine's block uses
  return x.mul(0.5).mul(tf.erf(x.mul(Math.SQRT1_2)).add(1));
}

function attention(h, v, p, cfg, B, mask) {
  const { T, d, heads: H } = cfg, D = d / H;
  const split = (w) => h.matMul(v[p + w + ".w"]).add(v[p + w + ".b"])
    .reshape([B, T, H, D]).transpose([0, 2, 1, 3]);
  const q = split("q"), k = split("k"), val = split("v");
  const scores = tf.matMul(q, k, false, true).mul(1 / Math.sqrt(D)).add(mask);
  const out = tf.matMul(tf.softmax(scores, -1), val).transpose([0, 2, 1, 3]).reshape([B * T, d]);
  return out.matMul(v[p + "o.w"]).add(v[p + "o.b"]);
}

function buildTransformerStep(cfg, rand) {
  const { batch: B, T, d, vocab: V } = cfg;
  const vars = tfParams(cfg, rand);
  const idx = Int32Array.from({ length: B * (T + 1) }, () => Math.floor((rand() + 0.5) * V) % V);
  const all = tf.tensor2d(idx, [B, T + 1], "int32");
  // the embedding lookup as one-hot rows times the table: the same values as a gather,
  // and its gradient is a matMul on every backend (wasm has no kernel for gather's).
  // oneHot is made int32 then cast: tf.js 4.22's wasm oneHot asked for float32 writes
  // the int bits (1 becomes 1.4e-45)
  const inputs = tf.oneHot(all.slice([0, 0], [B, T]).reshape([B * T]), V).cast("float32");
  const target = tf.oneHot(all.slice([0, 1], [B, T]).reshape([B * T]), V);
  // causal: 0 where a position may attend, a large negative number above the diagonal
  const lower = tf.linalg.bandPart(tf.ones([T, T]), -1, 0);
  const mask = tf.sub(1, lower).mul(-1e9);
  const forward = () => {
    let x = inputs.matMul(vars.tok).reshape([B, T, d]).add(vars.pos).reshape([B * T, d]);
    for (let l = 0; l < cfg.layers; l++) {
      const p = `b${l}.`;
      x = x.add(attention(layerNorm(x, vars[p + "ln1.g"], vars[p + "ln1.b"]), vars, p, cfg, B, mask));
      const h = layerNorm(x, vars[p + "ln2.g"], vars[p + "ln2.b"]);
      const m = gelu(h.matMul(vars[p + "fc1.w"]).add(vars[p + "fc1.b"]));
      x = x.add(m.matMul(vars[p + "fc2.w"]).add(vars[p + "fc2.b"]));
    }
    const logits = layerNorm(x, vars["lnf.g"], vars["lnf.b"]).matMul(vars.head);
    return tf.losses.softmaxCrossEntropy(target, logits);
  };
  const opt = tf.train.adam(cfg.lr);
  const list = Object.values(vars);
  const params = list.reduce((n, t) => n + t.size, 0);
  return { step: () => opt.minimize(forward, true, list), params };
}
window.buildTransformerStep = buildTransformerStep;

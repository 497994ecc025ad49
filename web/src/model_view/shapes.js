// The built-in blocks' shape rules on the UI thread, written to give what
// scellis.catalog.sml_shapes gives (same output shape, same mismatch), so a form edit or a
// rewire can redraw the graph's shapes at once. A block whose id has no rule here is not
// predicted: Model View then waits for the worker. The browser test checks these rules
// against the Python ones on random fields and shapes.

export class ShapeMismatch extends Error {
  // field: the block's field that holds `expected`, when one does (setting it to `got`
  // makes the block fit its input)
  constructor(what, expected, got, index = 0, field = null) {
    super(`expects ${what} ${expected}, gets ${got}`);
    Object.assign(this, { what, expected, got, index, field });
  }
}

const isInt = (d) => Number.isInteger(d);

function last(shape, f, key, minRank = 1, rank = null) {
  if (rank !== null && shape.length !== rank) throw new ShapeMismatch("rank", rank, shape.length);
  if (shape.length < minRank) throw new ShapeMismatch("rank at least", minRank, shape.length);
  const got = shape[shape.length - 1], want = f[key];
  if (isInt(got) && isInt(want) && got !== want) throw new ShapeMismatch("last dim", want, got, 0, key);
}

const feature = (key, outKey) => (f, xs) => { last(xs[0], f, key); return [...xs[0].slice(0, -1), f[outKey]]; };
const same = (key) => (f, xs) => { last(xs[0], f, key); return [...xs[0]]; };

function recurrent(f, xs) {
  last(xs[0], f, "input_size", 1, 3);
  const x = xs[0];
  const h = f.bidirectional && isInt(f.hidden_size) ? 2 * f.hidden_size : f.hidden_size;
  return f.output === "last" ? [x[0], h] : [x[0], x[1], h];
}

// output steps of windows spanning `span` steps over `t` (symbolic stays symbolic)
// (and so does `t` while a field is not filled in yet)
function steps(t, span, stride, lo, hi) {
  if (![t, span, stride, lo, hi].every(isInt)) return t;
  if (t + lo + hi < span) throw new ShapeMismatch("a sequence of at least", span - lo - hi, t);
  return Math.floor((t + lo + hi - span) / stride) + 1;
}

function conv1d(f, xs) {
  last(xs[0], f, "in_channels", 1, 3);
  const k = f.kernel_size, d = f.dilation, pad = f.padding;
  const x = xs[0];
  if (![k, d].every(isInt)) return [x[0], x[1], f.out_channels];
  const total = d * (k - 1);
  let lo, hi;
  if (pad === "causal") [lo, hi] = [total, 0];
  else if (pad === "same") [lo, hi] = [Math.floor(total / 2), total - Math.floor(total / 2)];
  else if (pad === "valid") [lo, hi] = [0, 0];
  else if (isInt(pad)) [lo, hi] = [pad, pad];
  else throw new ShapeMismatch("padding", "an int, valid, same or causal", pad);
  return [x[0], steps(x[1], total + 1, f.stride, lo, hi), f.out_channels];
}

function pool1d(f, xs) {
  const x = xs[0];
  if (x.length !== 3) throw new ShapeMismatch("rank", 3, x.length);
  const k = f.kernel_size, p = f.padding;
  if (!isInt(k)) return [...x];
  return [x[0], steps(x[1], k, f.stride || k, p, p), x[2]];
}

function globalPool(f, xs) {
  const x = xs[0];
  if (x.length !== 3) throw new ShapeMismatch("rank", 3, x.length);
  return [x[0], x[2]];
}

// an image size field as [rows, columns]: an int is both; null while it is not a number
// or a pair of numbers (a field not filled in yet)
function pair(v) {
  if (isInt(v)) return [v, v];
  if (Array.isArray(v) && v.length === 2 && v.every(isInt)) return [v[0], v[1]];
  return null;
}

// x is [B, C, H, W] and, where `key` is given, C is that field
function image(x, f, key) {
  if (x.length !== 4) throw new ShapeMismatch("rank", 4, x.length);
  const got = x[1], want = key ? f[key] : null;
  if (isInt(got) && isInt(want) && got !== want) throw new ShapeMismatch("channels (axis 1)", want, got, 0, key);
}

// [B, channels, H_out, W_out] of windows k (each size a pair, null: unknown)
function windows(x, channels, k, s, d, lo, hi) {
  if ([k, s, d, lo, hi].includes(null)) return [x[0], channels, x[2], x[3]];
  const hw = [0, 1].map((a) => steps(x[2 + a], d[a] * (k[a] - 1) + 1, s[a], lo[a], hi[a]));
  return [x[0], channels, ...hw];
}

function conv2d(f, xs) {
  const x = xs[0];
  image(x, f, "in_channels");
  const k = pair(f.kernel_size), s = pair(f.stride), d = pair(f.dilation), pad = f.padding;
  if (k === null || d === null) return [x[0], f.out_channels, x[2], x[3]];
  let lo, hi;
  if (pad === "valid") lo = hi = [0, 0];
  else if (pad === "same") {
    if (s === null || s[0] !== 1 || s[1] !== 1) throw new ShapeMismatch("stride with padding 'same'", 1, f.stride);
    const total = [0, 1].map((a) => d[a] * (k[a] - 1));
    lo = total.map((t) => Math.floor(t / 2));
    hi = total.map((t) => t - Math.floor(t / 2));
  } else if ((lo = pair(pad)) !== null) hi = lo;
  else throw new ShapeMismatch("padding", "an int, a pair, valid or same", pad);
  return windows(x, f.out_channels, k, s, d, lo, hi);
}

// torch's ceil_mode count: one more window where the last one starts inside the input
// (or its leading padding)
function ceilSteps(t, span, stride, pad) {
  if (![t, span, stride, pad].every(isInt)) return t;
  let n = Math.ceil((t + 2 * pad - span) / stride) + 1;
  if ((n - 1) * stride >= t + pad) n -= 1;
  if (n < 1) throw new ShapeMismatch("a sequence of at least", span - 2 * pad - stride + 1, t);
  return n;
}

function pool2d(f, xs) {
  const x = xs[0];
  image(x, f, null);
  const k = pair(f.kernel_size), p = pair(f.padding);
  const s = f.stride === null || f.stride === undefined ? k : pair(f.stride);
  if (!f.ceil_mode || [k, s, p].includes(null)) return windows(x, x[1], k, s, [1, 1], p, p);
  return [x[0], x[1], ...[0, 1].map((a) => ceilSteps(x[2 + a], k[a], s[a], p[a]))];
}

function batchNorm2d(f, xs) {
  image(xs[0], f, "num_features");
  return [...xs[0]];
}

function tcn(f, xs) {
  last(xs[0], f, "in_channels", 1, 3);
  return [...xs[0].slice(0, -1), f.channels];
}

const head = (nKey) => (f, xs) => {
  const x = xs[0];
  last(x, f, "in_features", f.pool !== "none" ? 3 : 1);
  return [...(f.pool !== "none" ? x.slice(0, -2) : x.slice(0, -1)), f[nKey]];
};

function mlp(f, xs) {
  last(xs[0], f, "in_features");
  // Python's `out_features or in_features`: 0 and None both fall back
  return [...xs[0].slice(0, -1), f.out_features || f.in_features];
}

function position(f, xs) {
  const x = xs[0];
  last(x, f, "dim", 2);
  const t = x[x.length - 2];
  if (isInt(t) && t > f.max_len) throw new ShapeMismatch("a sequence of at most", f.max_len, t);
  return [...x];
}

const residual = (f, xs) => [...xs[0]];

export const RULES = {
  "nn/linear": feature("in_features", "out_features"),
  "nn/lm_head": feature("d_model", "vocab_size"),
  "nn/embedding": (f, xs) => [...xs[0], f.embedding_dim],
  "nn/lstm": recurrent,
  "nn/gru": recurrent,
  "nn/conv1d": conv1d,
  "nn/tcn": tcn,
  "nn/max_pool1d": pool1d,
  "nn/avg_pool1d": pool1d,
  "nn/global_pool1d": globalPool,
  "nn/batch_norm1d": same("num_features"),
  "nn/conv2d": conv2d,
  "nn/max_pool2d": pool2d,
  "nn/avg_pool2d": pool2d,
  "nn/batch_norm2d": batchNorm2d,
  "nn/regression_head": head("n_outputs"),
  "nn/classification_head": head("n_classes"),
  "nn/mlp": mlp,
  "nn/gated_mlp": mlp,
  "nn/token_type": same("dim"),
  "nn/transformer": same("d_model"),
  "nn/transformer_block": same("d_model"),
  "nn/attention": same("embed_dim"),
  "nn/layer_norm": same("normalized_shape"),
  "nn/rms_norm": same("normalized_shape"),
  "nn/learned_position": position,
  "nn/sinusoidal_position": same("dim"),
  "nn/dropout": residual,
  "nn/activation": residual,
};

export function inferShape(blockId, fields, inputs) {
  // -> a shape, or throws ShapeMismatch; undefined when there is no rule here
  const rule = RULES[blockId];
  if (!rule) return undefined;
  if (!inputs.length) return null;
  return rule(fields, inputs);
}

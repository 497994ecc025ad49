// The TF.js side of the import tests: builds small random-weight Layers models with the
// pure-JS @tensorflow/tfjs (CPU backend), saves each as model.json + weight shards (the
// format model.save writes), quantised copies as tensorflowjs_converter writes them, and
// each model's predictions on random inputs (of the quantised copies: TF.js' own loads).
// Usage: node oracle.mjs OUT_DIR
import * as tf from '@tensorflow/tfjs';
import fs from 'node:fs';
import path from 'node:path';

const SHARD_BYTES = 400; // small, so every model spans several shard files
let seed = 1;

function mlp() {
  const m = tf.sequential();
  m.add(tf.layers.dense({units: 8, activation: 'relu', inputShape: [6]}));
  m.add(tf.layers.dropout({rate: 0.25}));
  m.add(tf.layers.dense({units: 7, activation: 'tanh'}));
  m.add(tf.layers.dense({units: 6, activation: 'gelu', useBias: false}));
  m.add(tf.layers.dense({units: 5, activation: 'swish'}));
  m.add(tf.layers.dense({units: 5}));
  m.add(tf.layers.activation({activation: 'sigmoid'}));
  m.add(tf.layers.dense({units: 3, activation: 'softmax'}));
  return {model: m, input: () => tf.randomNormal([4, 6], 0, 1.5, 'float32', seed++)};
}

function embedLstm() {
  const m = tf.sequential();
  m.add(tf.layers.embedding({inputDim: 11, outputDim: 6, inputLength: 7}));
  m.add(tf.layers.lstm({units: 5, returnSequences: true})); // hard_sigmoid gates (the default)
  m.add(tf.layers.lstm({units: 4, recurrentActivation: 'sigmoid'}));
  m.add(tf.layers.dense({units: 3}));
  return {model: m, input: () => tf.randomUniform([3, 7], 0, 11, 'int32', seed++), ids: true};
}

function forecaster() { // the shape of examples/lstm_forecaster.sml: 20 steps of 1 series in
  const m = tf.sequential();
  m.add(tf.layers.lstm({units: 6, inputShape: [20, 1]}));
  m.add(tf.layers.dense({units: 1}));
  return {model: m, input: () => tf.randomNormal([3, 20, 1], 0, 1, 'float32', seed++)};
}

function gru() {
  const x = tf.input({shape: [7, 4], name: 'series'});
  let y = tf.layers.gru({units: 5, returnSequences: true}).apply(x); // hard_sigmoid, reset before
  y = tf.layers.gru({units: 3, recurrentActivation: 'sigmoid', useBias: false}).apply(y);
  y = tf.layers.dense({units: 2}).apply(y);
  return {model: tf.model({inputs: x, outputs: y}), input: () => tf.randomNormal([3, 7, 4], 0, 1, 'float32', seed++)};
}

function conv() {
  const x = tf.input({shape: [12, 3]});
  let y = tf.layers.conv1d({filters: 4, kernelSize: 3, padding: 'causal', dilationRate: 2, activation: 'relu'}).apply(x);
  y = tf.layers.conv1d({filters: 5, kernelSize: 3, padding: 'same'}).apply(y);
  y = tf.layers.layerNormalization({epsilon: 1e-3}).apply(y);
  y = tf.layers.dropout({rate: 0.3}).apply(y);
  y = tf.layers.conv1d({filters: 3, kernelSize: 2, strides: 2, activation: 'tanh'}).apply(y);
  y = tf.layers.layerNormalization({center: false}).apply(y);
  y = tf.layers.dense({units: 2}).apply(y);
  return {model: tf.model({inputs: x, outputs: y}), input: () => tf.randomNormal([2, 12, 3], 0, 1, 'float32', seed++)};
}

function randomise(model) {
  model.setWeights(model.getWeights().map((w) => tf.randomUniform(w.shape, -0.6, 0.6, 'float32', seed++)));
}

function concat(data) {
  const parts = Array.isArray(data) ? data : [data];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) { out.set(new Uint8Array(p), at); at += p.byteLength; }
  return out;
}

async function artifacts(model) {
  let saved;
  await model.save(tf.io.withSaveHandler(async (a) => {
    saved = a;
    return {modelArtifactsInfo: {dateSaved: new Date(), modelTopologyType: 'JSON'}};
  }));
  return {topology: saved.modelTopology, specs: saved.weightSpecs, bytes: concat(saved.weightData)};
}

function writeModel(dir, {topology, specs, bytes}) {
  fs.mkdirSync(dir, {recursive: true});
  const paths = [];
  for (let at = 0, i = 1; at < bytes.length; at += SHARD_BYTES, i++) {
    const name = `group1-shard${i}`;
    fs.writeFileSync(path.join(dir, name), bytes.subarray(at, at + SHARD_BYTES));
    paths.push(name);
  }
  const json = {format: 'layers-model', generatedBy: `TensorFlow.js tfjs-layers v${tf.version.tfjs}`,
    convertedBy: null, modelTopology: topology, weightsManifest: [{paths, weights: specs}]};
  fs.writeFileSync(path.join(dir, 'model.json'), JSON.stringify(json));
}

function f32ToF16(f) { // round to nearest (normal and zero values: the weights here)
  const u = new Uint32Array(new Float32Array([f]).buffer)[0];
  const sign = (u >>> 16) & 0x8000;
  const exp = ((u >>> 23) & 0xff) - 127 + 15;
  if (exp <= 0) return sign;
  const mant = (u & 0x7fffff) + 0x1000;
  return sign | ((exp << 10) + (mant >>> 13));
}

// quantise float32 weights as tensorflowjs_converter --quantize_* does: uint8/uint16 affine
// (per tensor: scale = (max - min) / (2^bits - 1)), float16 by rounding
function quantise({topology, specs, bytes}, dtype) {
  const floats = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  const chunks = [], out = [];
  let at = 0;
  for (const spec of specs) {
    const n = spec.shape.reduce((a, b) => a * b, 1);
    const v = floats.subarray(at, at + n);
    at += n;
    if (dtype === 'float16') {
      chunks.push(new Uint16Array(Array.from(v, f32ToF16)).buffer);
      out.push({...spec, quantization: {dtype}});
      continue;
    }
    const levels = dtype === 'uint8' ? 255 : 65535;
    const lo = Math.min(...v), hi = Math.max(...v);
    const scale = hi > lo ? (hi - lo) / levels : 1;
    const q = Array.from(v, (x) => Math.round((x - lo) / scale));
    chunks.push((dtype === 'uint8' ? new Uint8Array(q) : new Uint16Array(q)).buffer);
    out.push({...spec, quantization: {dtype, scale, min: lo}});
  }
  return {topology, specs: out, bytes: concat(chunks)};
}

// TF.js' conv1d has no causal padding at run time (it saves it); Keras defines it as
// dilation*(k-1) zero steps before the sequence and a valid conv, which this runs
function causalAsValid(layer, x) {
  const c = layer.getConfig();
  const pad = c.dilationRate[0] * (c.kernelSize[0] - 1);
  const valid = tf.layers.conv1d({...c, name: undefined, padding: 'valid'});
  const padded = tf.pad(x, [[0, 0], [pad, 0], [0, 0]]);
  valid.apply(padded); // builds its weights, then set to the layer's
  valid.setWeights(layer.getWeights());
  return valid.apply(padded);
}

// the loaded model's layers run one after another (the models here are chains)
async function predict(art, x) {
  const model = await tf.loadLayersModel(tf.io.fromMemory({modelTopology: art.topology,
    weightSpecs: art.specs, weightData: art.bytes.slice().buffer}));
  let y = x;
  for (const layer of model.layers) {
    if (layer.getClassName() === 'InputLayer') continue;
    const causal = layer.getClassName() === 'Conv1D' && layer.getConfig().padding === 'causal';
    y = causal ? causalAsValid(layer, y) : layer.apply(y);
  }
  return y.arraySync();
}

const CASES = {mlp, embed_lstm: embedLstm, forecaster, gru, conv};
const QUANTISED = {mlp: ['uint8', 'uint16', 'float16'], conv: ['uint8', 'float16']};
const out = process.argv[2];
for (const [name, make] of Object.entries(CASES)) {
  const {model, input, ids} = make();
  randomise(model);
  const art = await artifacts(model);
  const x = input();
  const variants = {[name]: art};
  for (const q of QUANTISED[name] || []) variants[`${name}_${q}`] = quantise(art, q);
  for (const [v, a] of Object.entries(variants)) {
    writeModel(path.join(out, v), a);
    const io = {input: x.arraySync(), ids: Boolean(ids), output: await predict(a, x)};
    fs.writeFileSync(path.join(out, v, 'io.json'), JSON.stringify(io));
  }
}

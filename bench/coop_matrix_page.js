// The page of bench/coop_matrix_browser.py: Chromium's subgroup matrices, probed and checked.
// browser_gpu.py's POST_JS comes first (__q, __post).
const FEATURE = "chromium-experimental-subgroup-matrix";
function toHalf(v) {  // round to nearest even; the values used here are normal or zero
  const f = new Float32Array([v]), x = new Uint32Array(f.buffer)[0];
  const sign = (x >>> 16) & 0x8000, e = ((x >>> 23) & 0xff) - 112, m = x & 0x7fffff;
  if (e <= 0) return sign;
  let h = sign | (e << 10) | (m >>> 13);
  const rest = m & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1))) h++;
  return h;
}
function fromHalf(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >>> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}
function randomValues(n, seed) {  // multiples of 1/256 in [-1, 1): exact in f16
  let x = seed >>> 0;
  return Array.from({length: n}, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return ((x >>> 16) % 512 - 256) / 256;
  });
}
function pack(values, type) {
  return type === "f16" ? new Uint16Array(values.map(toHalf)) : new Float32Array(values);
}
function kernel(cfg, MM, KK, NN, fm, fn, wg) {
  const T = cfg.componentType, R = cfg.resultComponentType;
  const each = (n, f) => Array.from({length: n}, (_, i) => f(i)).join("\n");
  const pairs = (f) => each(fm, (i) => each(fn, (j) => f(i, j)));
  return (T === "f16" || R === "f16" ? "enable f16;\n" : "") +
`enable chromium_experimental_subgroup_matrix;
alias L = subgroup_matrix_left<${T}, ${cfg.K}, ${cfg.M}>;
alias Rt = subgroup_matrix_right<${T}, ${cfg.N}, ${cfg.K}>;
alias Res = subgroup_matrix_result<${R}, ${cfg.N}, ${cfg.M}>;
@group(0) @binding(0) var<storage, read> a: array<${T}>;
@group(0) @binding(1) var<storage, read> b: array<${T}>;
@group(0) @binding(2) var<storage, read_write> c: array<${R}>;
@compute @workgroup_size(${wg})
fn main(@builtin(workgroup_id) wid: vec3u) {
  let row0 = wid.y * ${fm * cfg.M}u;
  let col0 = wid.x * ${fn * cfg.N}u;
${pairs((i, j) => `  var acc${i}_${j} = Res();`)}
  for (var k = 0u; k < ${KK}u; k += ${cfg.K}u) {
${each(fm, (i) => `    let l${i} = subgroupMatrixLoad<L>(&a, (row0 + ${i * cfg.M}u) * ${KK}u + k, false, ${KK}u);`)}
${each(fn, (j) => `    let r${j} = subgroupMatrixLoad<Rt>(&b, k * ${NN}u + col0 + ${j * cfg.N}u, false, ${NN}u);`)}
${pairs((i, j) => `    acc${i}_${j} = subgroupMatrixMultiplyAccumulate(l${i}, r${j}, acc${i}_${j});`)}
  }
${pairs((i, j) => `  subgroupMatrixStore(&c, (row0 + ${i * cfg.M}u) * ${NN}u + col0 + ${j * cfg.N}u, acc${i}_${j}, false, ${NN}u);`)}
}`;
}
async function compiled(device, code) {
  device.pushErrorScope("validation");
  const module = device.createShaderModule({code});
  const info = await module.getCompilationInfo();
  const pipeline = device.createComputePipeline({layout: "auto", compute: {module, entryPoint: "main"}});
  const err = await device.popErrorScope();
  const msgs = info.messages.filter((m) => m.type === "error").map((m) => m.message);
  if (err || msgs.length) throw new Error([...msgs, err && err.message].filter(Boolean).join(" | "));
  return pipeline;
}
function bound(device, pipeline, arrays, outBytes) {
  const U = GPUBufferUsage;
  const bufs = arrays.map((x) => {
    const buf = device.createBuffer({size: Math.max(16, x.byteLength), usage: U.STORAGE | U.COPY_DST});
    device.queue.writeBuffer(buf, 0, x);
    return buf;
  });
  const out = device.createBuffer({size: outBytes, usage: U.STORAGE | U.COPY_SRC});
  const group = device.createBindGroup({layout: pipeline.getBindGroupLayout(0),
    entries: [...bufs, out].map((buffer, binding) => ({binding, resource: {buffer}}))});
  return {out, group};
}
function dispatch(device, pipeline, group, grid, times) {
  const enc = device.createCommandEncoder();
  for (let t = 0; t < times; t++) {
    const p = enc.beginComputePass();
    p.setPipeline(pipeline); p.setBindGroup(0, group); p.dispatchWorkgroups(...grid); p.end();
  }
  device.queue.submit([enc.finish()]);
}
async function readBack(device, buf, type) {
  const U = GPUBufferUsage;
  const staging = device.createBuffer({size: buf.size, usage: U.MAP_READ | U.COPY_DST});
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(buf, 0, staging, 0, buf.size);
  device.queue.submit([enc.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const raw = staging.getMappedRange().slice(0);
  staging.unmap();
  return type === "f16" ? Array.from(new Uint16Array(raw), fromHalf) : Array.from(new Float32Array(raw));
}
async function check(device, cfg, wg) {
  const MM = 4 * cfg.M, KK = 8 * cfg.K, NN = 4 * cfg.N;
  const a = randomValues(MM * KK, 1), b = randomValues(KK * NN, 2);
  const pipeline = await compiled(device, kernel(cfg, MM, KK, NN, 1, 1, wg));
  const size = cfg.resultComponentType === "f16" ? 2 : 4;
  const {out, group} = bound(device, pipeline, [pack(a, cfg.componentType), pack(b, cfg.componentType)], MM * NN * size);
  dispatch(device, pipeline, group, [NN / cfg.N, MM / cfg.M, 1], 1);
  const c = await readBack(device, out, cfg.resultComponentType);
  return {shape: [MM, KK, NN], a, b, c};
}
async function speed(device, cfg, wg, n) {
  const fm = 2, fn = 2;
  const pipeline = await compiled(device, kernel(cfg, n, n, n, fm, fn, wg));
  const x = pack(randomValues(n * n, 3), cfg.componentType);
  const size = cfg.resultComponentType === "f16" ? 2 : 4;
  const {group} = bound(device, pipeline, [x, x], n * n * size);
  const grid = [n / (fn * cfg.N), n / (fm * cfg.M), 1];
  dispatch(device, pipeline, group, grid, 2);
  await device.queue.onSubmittedWorkDone();
  const t0 = performance.now();
  dispatch(device, pipeline, group, grid, 10);
  await device.queue.onSubmittedWorkDone();
  const ms = (performance.now() - t0) / 10;
  return {n, ms_per_dispatch: ms, tflops: 2 * n ** 3 / (ms * 1e-3) / 1e12, blocks: `${fm}x${fn}`};
}
async function runAll(adapter, configs, wg) {
  // shader-f16 for f16 configurations; subgroups too, in case Dawn ties the two together
  const features = [FEATURE, ...["shader-f16", "subgroups"].filter((f) => adapter.features.has(f))];
  const device = await adapter.requestDevice({requiredFeatures: features});
  const runs = [];
  for (const cfg of configs) {
    const row = {config: cfg};
    const types = [cfg.componentType, cfg.resultComponentType];
    if (!types.every((t) => t === "f16" || t === "f32")) { row.skipped = "not a float configuration"; runs.push(row); continue; }
    if (types.includes("f16") && !device.features.has("shader-f16")) { row.skipped = "no shader-f16"; runs.push(row); continue; }
    try { Object.assign(row, await check(device, cfg, wg)); } catch (e) { row.error = String(e && e.message || e).slice(0, 1500); }
    if (!row.error) {
      try { row.speed = await speed(device, cfg, wg, +(__q.get("n") || 2048)); } catch (e) { row.speed_error = String(e && e.message || e).slice(0, 600); }
    }
    runs.push(row);
  }
  return runs;
}
(async () => {
  const out = {ua: navigator.userAgent, has_gpu: !!navigator.gpu};
  try {
    const a = navigator.gpu && await navigator.gpu.requestAdapter({powerPreference: "high-performance"});
    if (a) {
      const i = a.info || {};
      out.adapter = {vendor: i.vendor, architecture: i.architecture, description: i.description,
                     fallback: !!i.isFallbackAdapter, subgroupMinSize: i.subgroupMinSize,
                     subgroupMaxSize: i.subgroupMaxSize};
      out.features = [...a.features].sort();
      out.info_has_configs = "subgroupMatrixConfigs" in i;
      out.configs = Array.from(i.subgroupMatrixConfigs || [], (c) => ({componentType: c.componentType,
        resultComponentType: c.resultComponentType, M: Number(c.M), N: Number(c.N), K: Number(c.K)}));
      out.has_feature = a.features.has(FEATURE);
      if (out.has_feature) out.runs = await runAll(a, out.configs, i.subgroupMaxSize || 32);
    } else out.adapter = null;
  } catch (e) { out.error = String(e && e.message || e); }
  await __post(out);
})();

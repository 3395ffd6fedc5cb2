// Reads a GGUF file with @huggingface/gguf (npm, an independent reader) and prints what it
// found as JSON: every metadata key (arrays as {"length", "first"}), and the tensor infos
// (name, dtype, shape in ggml ne order, offset). usage: node hf_gguf_read.mjs NODE_MODULES FILE
import { createRequire } from "node:module";
import path from "node:path";

const [modules, file] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(modules), "x.js"));
const { gguf } = require("@huggingface/gguf");

const big = (_k, v) => (typeof v === "bigint" ? Number(v) : v);
const { metadata, tensorInfos, tensorDataOffset } = await gguf(path.resolve(file), {
  allowLocalFile: true,
});
const meta = {};
for (const [k, v] of Object.entries(metadata))
  meta[k] = Array.isArray(v) ? { length: v.length, first: v.slice(0, 8) } : v;
const tensors = tensorInfos.map((t) => ({
  name: t.name, dtype: t.dtype, shape: t.shape.map(Number), offset: Number(t.offset),
}));
console.log(JSON.stringify({ metadata: meta, tensors, data_offset: Number(tensorDataOffset) }, big));

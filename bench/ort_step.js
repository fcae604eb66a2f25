// Median step time of an ONNX model in ONNX Runtime (onnxruntime-node) with
// T intra-op threads on random inputs of the model's static shapes (floats in
// [-1, 1), integers in [0, 100): token ids):
//   NODE_PATH=<dir with node_modules> node ort_step.js MODEL.onnx T REPEATS
// prints "ort_step_s=<seconds>" and "ort_cpu_s=<seconds>", the median process
// CPU time (user + system, all threads) of a run.
const ort = require('onnxruntime-node');

async function main() {
  const [model, threads, repeats] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1,
    executionMode: 'sequential'});
  const feeds = {};
  for (const name of session.inputNames) {
    const meta = session.inputMetadata.find((m) => m.name === name);
    const shape = meta.shape.map((d) => (typeof d === 'number' ? d : 1));
    const size = shape.reduce((a, b) => a * b, 1);
    if (meta.type === 'int64') {
      const data = new BigInt64Array(size).map(
          () => BigInt(Math.floor(Math.random() * 100)));
      feeds[name] = new ort.Tensor('int64', data, shape);
    } else {
      const data = new Float32Array(size).map(() => Math.random() * 2 - 1);
      feeds[name] = new ort.Tensor('float32', data, shape);
    }
  }
  await session.run(feeds);
  const times = [];
  const cpus = [];
  for (let i = 0; i < Number(repeats); ++i) {
    const start = process.hrtime.bigint();
    const cpuStart = process.cpuUsage();
    await session.run(feeds);
    const cpu = process.cpuUsage(cpuStart);
    times.push(Number(process.hrtime.bigint() - start) / 1e9);
    cpus.push((cpu.user + cpu.system) / 1e6);
  }
  const median = (v) => v.sort((a, b) => a - b)[Math.floor(v.length / 2)];
  console.log(`ort_step_s=${median(times)}`);
  console.log(`ort_cpu_s=${median(cpus)}`);
}
main().catch((e) => { console.error(e); process.exit(1); });

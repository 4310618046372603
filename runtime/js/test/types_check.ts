// SPDX-License-Identifier: Apache-2.0
// Compiled, not run (scripts/test-wasm.sh: tsc --noEmit --strict against the staged package's
// index.d.ts): the README's use of the API type-checks, and misuse does not.
import * as linfer from 'linfer';
import linferDefault from 'linfer';

async function main(bytes: Uint8Array): Promise<number> {
  const loaded: linfer.ModuleInfo = await linfer.load({ threads: 2 });
  // @ts-expect-error: threads is a number
  linfer.load({ threads: 'all' });
  const model: linfer.Model = await linfer.Model.fromBytes(bytes);
  const info: linfer.ModelInfo = model.info;
  const session: linfer.Session = model.createSession({ maxSeqLen: Math.min(512, info.n), threads: loaded.threads });
  const out: linfer.Output = session.run(Int32Array.of(1, 2, 3));
  const first: number = out.data[0] + out.rows * out.cols;
  try {
    session.run([1, 2]);
  } catch (e) {
    if (e instanceof linferDefault.LinferError) console.log(e.status, e.statusName, e.message);
  }
  // @ts-expect-error: an option the API does not have
  model.createSession({ maxLen: 4 });
  // @ts-expect-error: ids are numbers
  session.run(['a']);
  const one: Float32Array = model.embed('a sentence');
  const many: Float32Array[] = model.embed(['a sentence', 'another']);
  // @ts-expect-error: texts are strings
  model.embed([1, 2]);
  const stats: { inUse: number; memoryBytes: number } = await linfer.heapStats();
  const chosen: linfer.ModuleInfo = await linfer.moduleInfo();
  const timed: number = chosen.timing ? chosen.timing.relaxedUs - chosen.timing.simd128Us : 0;
  const int8Kernel: string = chosen.int8Kernel;
  const relaxedThreads: boolean = chosen.file === 'linfer-relaxed-threads.wasm';  // (a type error if not a file it names)
  session.dispose();
  model.dispose();
  return first + one[0] + many.length + stats.inUse + (await linfer.version()).length + info.num_classes + timed +
    int8Kernel.length + Number(relaxedThreads);
}
export { main };

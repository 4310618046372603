// SPDX-License-Identifier: Apache-2.0
// What choosing the module costs at load: the probes and, where relaxed SIMD runs, the timing of the
// relaxed module's two int8 kernels (moduleInfo().chooseMs, timing.ms), and which module each load chose, in fresh
// processes of Node 20 (Debian's), Node 22 (npm's) and fresh pages of headless Chromium (the
// language-ID page, examples/web; not cross-origin isolated: its timer has 0.1 ms steps).
//   node tools/bench/web/choice_time.mjs [RUNS]     (after scripts/test-wasm.sh built the package)
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { evaluateInPage } from './chromium.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const runs = Number(process.argv[2] || 10);
const pkg = path.join(root, 'build-wasm/js/linfer/index.mjs');
const script = `const t = performance.now(); const l = await import(${JSON.stringify(pkg)}); ` +
  `const i = await l.moduleInfo(); console.log(JSON.stringify({ ...i, loadMs: performance.now() - t }));`;
const engines = [['Node 20', 'node'], ['Node 22', path.join(root, 'build-wasm-tools/node_modules/.bin/node')]];

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
function report(name, infos) {
  const chosen = {};
  for (const i of infos) chosen[i.file] = (chosen[i.file] || 0) + 1;
  const timed = infos.filter((i) => i.timing);
  console.log(`${name}: ${Object.entries(chosen).map(([f, c]) => `${f} ${c}x`).join(', ')} (${infos[0].reason}); ` +
    `probes and timing median ${median(infos.map((i) => i.chooseMs)).toFixed(1)} ms ` +
    `(${Math.min(...infos.map((i) => i.chooseMs)).toFixed(1)}-${Math.max(...infos.map((i) => i.chooseMs)).toFixed(1)})` +
    (timed.length ? `, of which the timing ${median(timed.map((i) => i.timing.ms)).toFixed(1)} ms; ` +
      `relaxed / SIMD128 time ${timed.map((i) => (i.timing.relaxedUs / i.timing.simd128Us).toFixed(2)).join(' ')}` : '') +
    (infos[0].loadMs !== undefined ? `; import + moduleInfo() median ${median(infos.map((i) => i.loadMs)).toFixed(1)} ms` : ''));
}

{
  const results = { 'Node 20': [], 'Node 22': [], Chromium: [] };
  for (let r = 0; r < runs; ++r) {  // alternating engines
    for (const [name, bin] of engines)
      results[name].push(JSON.parse(execFileSync(bin, ['--input-type=module', '-e', script], { encoding: 'utf8' })));
    const { value } = await evaluateInPage('/usr/bin/chromium', root, '/examples/web/index.html',
      "new Promise((r) => setTimeout(r, 1500)).then(() => import('/build-wasm/js/linfer/index.mjs')).then((l) => l.moduleInfo())");
    results.Chromium.push(value);
  }
  for (const [name, infos] of Object.entries(results)) report(name, infos);
}

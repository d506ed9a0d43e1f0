// `npm start`: one Node process that builds dist/ only when it is not current, then runs the CLI from
// it. A current build (its stamp equals the stamp of the sources, cli/build-stamp.mjs) is used as it
// is, and the line says so; a stale or missing one is rebuilt through `npm run build`'s script first,
// and the line says why. The CLI is then imported into this same process (its arguments are this
// script's), so a start on a built tree costs one Node start-up, not two.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildState } from '../cli/build-stamp.mjs';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const state = buildState(root, join(root, 'dist'));
let built = state === 'current';
if (built) {
  process.stdout.write('dist/ is current with the sources: not rebuilding\n');
} else {
  process.stdout.write(`dist/ is ${state === 'missing' ? 'missing' : 'older than the sources'}: building\n`);
  const tsx = createRequire(import.meta.url).resolve('tsx/cli');
  const result = spawnSync(process.execPath, [tsx, join(root, 'scripts', 'build.ts')], {
    cwd: root,
    stdio: 'inherit',
  });
  built = result.status === 0;
  if (!built) process.exitCode = result.status ?? 1;
}

const main = join(root, 'dist', 'cli', 'main.js');
if (built && existsSync(main)) {
  // dist/cli/main.js reads process.argv.slice(2): this script's own arguments (`serve`, `--port 0`).
  await import(pathToFileURL(main).href);
} else if (built) {
  process.stderr.write('sandlot: the build wrote no dist/cli/main.js\n');
  process.exitCode = 1;
}

// `npm start`'s first step: build dist/ only when it is not current. A current build (its stamp
// equals the stamp of the sources, cli/build-stamp.mjs) is used as it is, and the line says so; a
// stale or missing one is rebuilt through `npm run build`'s script, and the line says why.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildState } from '../cli/build-stamp.mjs';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const state = buildState(root, join(root, 'dist'));
if (state === 'current') {
  process.stdout.write('dist/ is current with the sources: not rebuilding\n');
} else {
  process.stdout.write(`dist/ is ${state === 'missing' ? 'missing' : 'older than the sources'}: building\n`);
  const tsx = createRequire(import.meta.url).resolve('tsx/cli');
  const result = spawnSync(process.execPath, [tsx, join(root, 'scripts', 'build.ts')], {
    cwd: root,
    stdio: 'inherit',
  });
  process.exitCode = result.status ?? 1;
}

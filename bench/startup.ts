// Start-up time and memory of `sandlot serve`, TypeScript through the tsx loader (how `npm start` ran
// before the production build) against the compiled JavaScript in dist/, side by side on one machine.
// Never part of `npm test`; see bench/README.md.
//
//   npm run build && npx tsx bench/startup.ts
//
// Each run spawns a fresh process, reads the port from its "listening on" line, polls /readyz until it
// answers 200 (time to ready, from spawn), reads VmRSS and VmHWM from /proc/<pid>/status, stops it
// with SIGTERM. Runs alternate between the two entries so that drift on the machine hits both.
// `--help` (load the CLI, print, exit) is timed the same way.
//
// Then the build and `npm start`: the tsc emit the build used before (`tsc -p tsconfig.build.json`)
// against the esbuild build (scripts/build.ts), each into a scratch directory, alternating; and
// `npm start -- --port 0` on a current dist/ (scripts/start.mjs only checks the stamp) to /readyz,
// against what `npm start` cost before (the tsc build, then serve from dist/: the two medians added).
// With BENCH_COMPARE_TREE=<dir> (a checkout of an earlier commit, with its node_modules), `npm start`
// there is built once and then timed alternately with this checkout's, for a side-by-side ratio.
//
// Settings (environment): BENCH_RUNS (7 per entry and mode), BENCH_BUILD_RUNS (3 per build), BENCH_MODES (embedded,production):
// embedded is PGlite under a throw-away data directory; production is PostgreSQL (TEST_DATABASE_URL,
// a throw-away schema, dropped at the end) with placeholder URLs for the services nobody calls.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isolatedPostgres, testDatabaseUrl } from '../test/support/databases.ts';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const RUNS = Number(process.env['BENCH_RUNS'] ?? 7);
const MODES = (process.env['BENCH_MODES'] ?? 'embedded,production').split(',');
const BUILD_RUNS = Number(process.env['BENCH_BUILD_RUNS'] ?? 3);
const READY_TIMEOUT_MS = 60_000;

interface Entry {
  name: string;
  argv: (scratch: string) => string[];
}

// The entry as it was: register tsx's ESM hooks, then import the TypeScript CLI.
const legacyEntry = (scratch: string): string => join(scratch, 'legacy-entry.mjs');
const entries: Entry[] = [
  { name: 'tsx loader (before)', argv: (scratch) => [legacyEntry(scratch)] },
  { name: 'dist/ JavaScript (after)', argv: () => [join(root, 'dist', 'cli', 'main.js')] },
];

interface Sample {
  readyMs: number;
  rssKiB: number;
  hwmKiB: number;
}

async function statusKiB(pid: number): Promise<{ rss: number; hwm: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

async function waitReady(base: string, deadline: number): Promise<void> {
  for (;;) {
    try {
      if ((await fetch(`${base}/readyz`)).status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${base}/readyz did not answer 200 in time`);
    await new Promise((done) => setTimeout(done, 5));
  }
}

/** One serve process: spawn → ready → measure → SIGTERM → exit. */
async function serveOnce(argv: string[], env: NodeJS.ProcessEnv): Promise<Sample> {
  return readyOnce(process.execPath, [...argv, 'serve', '--port', '0'], env);
}

/** `npm start` on a checkout (this one unless told: the stamp check, then serve from dist/), to /readyz. */
async function npmStartOnce(env: NodeJS.ProcessEnv, cwd = root): Promise<number> {
  return (await readyOnce('npm', ['start', '--silent', '--', '--port', '0'], env, true, cwd)).readyMs;
}

async function readyOnce(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  group = false,
  cwd = root,
): Promise<Sample> {
  const started = performance.now();
  const child = spawn(command, args, {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: group,
  });
  let output = '';
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  try {
    const base = await new Promise<string>((done, fail) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const match = /listening on (http:\/\/\S+)/.exec(output);
        if (match?.[1] !== undefined) done(match[1]);
      });
      void exited.then((code) => fail(new Error(`serve exited (${code}) before listening:\n${output}`)));
    });
    await waitReady(base, Date.now() + READY_TIMEOUT_MS);
    const readyMs = performance.now() - started;
    const { rss, hwm } = await statusKiB(child.pid!);
    return { readyMs, rssKiB: rss, hwmKiB: hwm };
  } finally {
    // npm runs the server as its grandchild: signal the whole group.
    if (group) process.kill(-child.pid!, 'SIGTERM');
    else child.kill('SIGTERM');
    await exited;
  }
}

async function timedExit(command: string, args: string[], cwd = root): Promise<number> {
  const started = performance.now();
  const child = spawn(command, args, { cwd, stdio: ['ignore', 'ignore', 'inherit'] });
  const code = await new Promise<number | null>((done) => child.on('exit', done));
  if (code !== 0) throw new Error(`${args.join(' ')} exited ${code}`);
  return performance.now() - started;
}

/** The build before (tsc emit) and after (esbuild), then `npm start` on a built tree. */
async function buildAndStart(scratch: string, env: NodeJS.ProcessEnv): Promise<void> {
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const tsxCli = join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs');
  const builds = [
    {
      name: 'tsc emit (before)',
      run: () =>
        timedExit(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', join(scratch, 'tsc-out')]),
      times: [] as number[],
    },
    {
      name: 'esbuild (after)',
      run: () =>
        timedExit(process.execPath, [tsxCli, 'scripts/build.ts', '--out-dir', join(scratch, 'esbuild-out')]),
      times: [] as number[],
    },
  ];
  for (let run = 0; run < BUILD_RUNS; run++) for (const build of builds) build.times.push(await build.run());
  process.stdout.write('\nbuild\n');
  for (const build of builds) process.stdout.write(`  ${build.name}: ${fmt(build.times, 'ms')}\n`);
  process.stdout.write(
    `  after/before (medians): ${(median(builds[1]!.times) / median(builds[0]!.times)).toFixed(2)}\n`,
  );

  // npm start on a current dist/ (the stamp is current), against the old `npm start`: the tsc build,
  // then serve from dist/; and against an earlier checkout's `npm start` when one is named.
  await timedExit(process.execPath, [tsxCli, 'scripts/build.ts']);
  await npmStartOnce(env);
  const compare = process.env['BENCH_COMPARE_TREE'];
  if (compare !== undefined) {
    await timedExit(
      process.execPath,
      [join(compare, 'node_modules', 'tsx', 'dist', 'cli.mjs'), 'scripts/build.ts'],
      compare,
    );
    await npmStartOnce(env, compare);
  }
  const starts: number[] = [];
  const serves: number[] = [];
  const compared: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    starts.push(await npmStartOnce(env));
    serves.push((await serveOnce([join(root, 'dist', 'cli', 'main.js')], env)).readyMs);
    if (compare !== undefined) compared.push(await npmStartOnce(env, compare));
  }
  const before = median(builds[0]!.times) + median(serves);
  process.stdout.write(
    `\nnpm start → /readyz 200 (embedded)\n` +
      `  before (tsc build + serve from dist/): ${before.toFixed(0)} ms (medians added)\n` +
      `  after (built tree, stamp current):    ${fmt(starts, 'ms')}\n` +
      `  after/before: ${(median(starts) / before).toFixed(2)}\n` +
      (compare === undefined
        ? ''
        : `  ${compare} (built tree): ${fmt(compared, 'ms')}\n` +
          `  this checkout / ${compare}: ${(median(starts) / median(compared)).toFixed(2)}\n`),
  );
}

async function helpOnce(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, [...argv, '--help'], { cwd: root, env, stdio: 'ignore' });
  const code = await new Promise<number | null>((done) => child.on('exit', done));
  if (code !== 0) throw new Error(`--help exited ${code}`);
  return performance.now() - started;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};
const fmt = (values: number[], unit: string, scale = 1): string =>
  `median ${(median(values) / scale).toFixed(0)} ${unit} (min ${(Math.min(...values) / scale).toFixed(0)}, max ${(Math.max(...values) / scale).toFixed(0)})`;

async function modeEnv(
  mode: string,
  scratch: string,
): Promise<{ env: NodeJS.ProcessEnv; drop: () => Promise<void> }> {
  const base = { PATH: process.env['PATH'] ?? '', HOME: scratch, HOST: '127.0.0.1' };
  if (mode === 'embedded')
    return { env: { ...base, SANDLOT_DATA_DIR: join(scratch, 'data') }, drop: async () => {} };
  if (mode !== 'production') throw new Error(`unknown BENCH_MODES entry "${mode}"`);
  const postgres = await isolatedPostgres();
  const url = new URL(testDatabaseUrl);
  url.searchParams.set('options', `-c search_path=${postgres.schema}`);
  // Nothing calls these while the server idles; they only have to be valid.
  const env = {
    ...base,
    DATABASE_URL: url.toString(),
    SANDLOT_MIGRATE_ON_START: 'true',
    SANDLOT_JWT_ISSUER: 'bench',
    SANDLOT_JWKS_URL: 'http://127.0.0.1:9/jwks',
    SANDLOT_PROJECTS_URL: 'http://127.0.0.1:9/projects',
    SANDLOT_RUN_SELECTION_URL: 'http://127.0.0.1:9/run-selection',
  };
  return { env, drop: () => postgres.drop() };
}

async function main(): Promise<void> {
  if (!existsSync(join(root, 'dist', 'cli', 'main.js'))) {
    throw new Error('dist/cli/main.js is missing: run `npm run build` first');
  }
  const scratch = await mkdtemp(join(tmpdir(), 'sandlot-startup-'));
  const tsx = pathToFileURL(join(root, 'node_modules', 'tsx', 'dist', 'esm', 'api', 'index.mjs')).href;
  const main = pathToFileURL(join(root, 'cli', 'main.ts')).href;
  await writeFile(
    legacyEntry(scratch),
    `import { register } from ${JSON.stringify(tsx)};\nregister();\nawait import(${JSON.stringify(main)});\n`,
  );
  try {
    process.stdout.write(`node ${process.version}, ${RUNS} runs per entry and mode\n`);
    for (const mode of MODES) {
      const { env, drop } = await modeEnv(mode, scratch);
      try {
        // Warm-up, not measured: creates the data directory or schema and applies the migrations,
        // and fills the OS file cache for both entries.
        for (const entry of entries) await serveOnce(entry.argv(scratch), env);
        const samples = entries.map(() => ({ serve: [] as Sample[], help: [] as number[] }));
        for (let run = 0; run < RUNS; run++) {
          for (const [index, entry] of entries.entries()) {
            samples[index]!.serve.push(await serveOnce(entry.argv(scratch), env));
            samples[index]!.help.push(await helpOnce(entry.argv(scratch), env));
          }
        }
        report(mode, samples);
        if (mode === 'embedded') await buildAndStart(scratch, env);
      } finally {
        await drop();
      }
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

function report(mode: string, samples: { serve: Sample[]; help: number[] }[]): void {
  process.stdout.write(`\n${mode}\n`);
  for (const [index, entry] of entries.entries()) {
    const { serve, help } = samples[index]!;
    process.stdout.write(
      `  ${entry.name}\n` +
        `    serve → /readyz 200: ${fmt(
          serve.map((s) => s.readyMs),
          'ms',
        )}\n` +
        `    RSS when ready:      ${fmt(
          serve.map((s) => s.rssKiB),
          'MiB',
          1024,
        )}\n` +
        `    peak RSS (VmHWM):    ${fmt(
          serve.map((s) => s.hwmKiB),
          'MiB',
          1024,
        )}\n` +
        `    --help to exit:      ${fmt(help, 'ms')}\n`,
    );
  }
  const [before, after] = samples;
  const ratio = (pick: (s: { serve: Sample[]; help: number[] }) => number[]) =>
    (median(pick(after!)) / median(pick(before!))).toFixed(2);
  process.stdout.write(
    `  after/before (medians): ready ${ratio((s) => s.serve.map((x) => x.readyMs))}, ` +
      `RSS ${ratio((s) => s.serve.map((x) => x.rssKiB))}, peak RSS ${ratio((s) => s.serve.map((x) => x.hwmKiB))}, ` +
      `--help ${ratio((s) => s.help)}\n`,
  );
}

await main();

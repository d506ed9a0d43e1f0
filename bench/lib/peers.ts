// The peers' figures for the main report: bench/peers/run.ts (DBOS Transact and Restate running the
// same lifecycle), installed first when its node_modules is missing or stale (`npm ci --prefix
// bench/peers`, from the npm registry, install scripts off). Whatever fails (the install, a peer
// that cannot run here) is reported as "peers skipped: <why>" and the bench goes on.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './root.ts';
import { runPeers, type PeerPostgres } from '../peers/run.ts';
import { status } from './progress.ts';

export interface PeerPoint {
  peer: string;
  variant: 'engine' | 'http';
  clients: number;
  lifecyclesPerSecond: number;
}

export interface PeersOutcome {
  points: PeerPoint[];
  /** One line per peer (or for all) that did not run: "dbos: …", "install: …". */
  skipped: string[];
  /** How the peers were installed in this run, if they were. */
  install?: string;
}

const peersDir = join(repoRoot, 'bench', 'peers');

/** Why the installed peers do not match bench/peers/package.json (undefined: they do). */
function staleness(): string | undefined {
  const manifest = JSON.parse(readFileSync(join(peersDir, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
  for (const [name, version] of Object.entries(manifest.dependencies ?? {})) {
    const file = join(peersDir, 'node_modules', name, 'package.json');
    if (!existsSync(file)) return `${name} is not installed`;
    const installed = (JSON.parse(readFileSync(file, 'utf8')) as { version?: string }).version;
    if (installed !== version) return `${name} ${installed ?? '?'} is installed, ${version} wanted`;
  }
  return undefined;
}

/** npm's error code and its first line that says what failed ("request to … failed, reason: …"). */
function npmReason(output: string): string {
  const lines = output
    .split('\n')
    .filter((line) => line.startsWith('npm error'))
    .map((line) => line.replace(/^npm error\s?/, '').trim())
    .filter(
      (line) => line !== '' && !/^(at |[{}]|[a-z]\w*: |A complete log|If you are behind a proxy)/.test(line),
    );
  const code = lines.find((line) => line.startsWith('code '));
  const cause = lines.find((line) => !/^(code|syscall|errno) /.test(line));
  return [code, cause]
    .filter((line): line is string => line !== undefined)
    .join(': ')
    .slice(0, 300);
}

/** `npm ci --prefix bench/peers`, its output forwarded line by line, a status line every 5 s. */
function npmCi(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['ci', '--prefix', peersDir, '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const started = performance.now();
    let output = '';
    const forward = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      output = (output + text).slice(0, 20_000);
      for (const line of text.split('\n')) if (line.trim() !== '') status(`npm: ${line.trim()}`);
    };
    child.stdout.on('data', forward);
    child.stderr.on('data', forward);
    const ticker = setInterval(
      () => status(`installing peers… ${Math.round((performance.now() - started) / 1000)} s`),
      5_000,
    );
    // A registry that stops answering must not hold the bench: 5 minutes is far beyond a normal install.
    const timer = setTimeout(() => child.kill('SIGTERM'), 300_000);
    child.once('error', (error) => {
      clearInterval(ticker);
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearInterval(ticker);
      clearTimeout(timer);
      if (code === 0) resolve();
      else {
        const why = npmReason(output);
        reject(new Error(`npm ci exited with ${code ?? signal ?? '?'}${why === '' ? '' : `: ${why}`}`));
      }
    });
  });
}

/** Installs the peers if needed; answers a note on success, or throws why it could not. */
export async function ensurePeersInstalled(): Promise<string | undefined> {
  const why = staleness();
  if (why === undefined) return undefined;
  status(`peers not installed (${why}): npm ci --prefix bench/peers`);
  const started = performance.now();
  await npmCi();
  const still = staleness();
  if (still !== undefined) throw new Error(`after npm ci, ${still}`);
  const seconds = Math.round((performance.now() - started) / 1000);
  status(`peers installed in ${seconds} s`);
  return `installed by this run (npm ci --prefix bench/peers, ${seconds} s)`;
}

/** Runs both peers at the bench's client counts; never throws. */
export async function runPeersForBench(options: {
  n: number;
  clients: number[];
  quick: boolean;
  warmup: number;
  postgres?: PeerPostgres;
}): Promise<PeersOutcome> {
  try {
    const run = await runPeers({
      concurrencies: options.clients,
      lifecycles: options.n,
      quick: options.quick,
      warmup: options.warmup,
      ...(options.postgres === undefined ? {} : { postgres: options.postgres }),
    });
    return {
      points: run.points.map((p) => ({
        peer: p.peer,
        variant: p.variant,
        clients: p.concurrency,
        lifecyclesPerSecond: p.lifecyclesPerSecond,
      })),
      skipped: run.skipped.map(({ peer, why }) => `${peer}: ${why}`),
    };
  } catch (error) {
    return { points: [], skipped: [`all: ${error instanceof Error ? error.message : String(error)}`] };
  }
}

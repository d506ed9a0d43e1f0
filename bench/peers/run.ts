// Peers for the lifecycle benchmark: the same four durable steps as Sandlot's lifecycle on DBOS
// Transact and on Restate, each engine-only and behind Sandlot's HTTP shape (ES256 token + one
// authority call per request). Each peer runs in its own driver process (driver.ts); Restate's runs
// inside a network namespace made here with only loopback up, so nothing leaves the machine.
// Needs `npm install --prefix bench/peers`, PostgreSQL on 127.0.0.1:5432 (trust) and root (ip netns).
//
//   npx tsx bench/peers/run.ts --quick                       # 1 and 8 clients, 100 lifecycles each
//   npx tsx bench/peers/run.ts --concurrency 1,8,64 --lifecycles 1000
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { DriverOptions } from './driver.ts';
import { resultMarker, type PeerPoint } from './load.ts';
import { inNetworkNamespace } from './netns.ts';

export interface PeerOptions {
  concurrencies: number[];
  /** Measured lifecycles per point (per peer, variant and concurrency). */
  lifecycles: number;
  /** A short warm-up and at most 100 lifecycles per point. */
  quick?: boolean;
  /** Unmeasured lifecycles before each point (default 20 with `quick`, else 100). */
  warmup?: number;
  /** Default both. */
  peers?: Array<PeerPoint['peer']>;
  /** The PostgreSQL server the peers use (default 127.0.0.1:5432, socket in /var/run/postgresql). */
  postgres?: PeerPostgres;
  /** Longest a peer's driver may take before it is killed (default: from the work it has to do). */
  timeoutMs?: number;
}

export interface PeerPostgres {
  host: string;
  port: number;
  user: string;
  /** Unix socket directory, for the Restate peer inside its network namespace. */
  socketDir: string;
}

export interface PeersRun {
  points: PeerPoint[];
  /** Peers that could not run here, and why. */
  skipped: Array<{ peer: PeerPoint['peer']; why: string }>;
}

export type { PeerPoint };

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const driverFile = fileURLToPath(new URL('./driver.ts', import.meta.url));

/**
 * Lifecycles/s per peer, variant and concurrency. A peer that cannot run here (say Restate without
 * root for its network namespace) or fails is listed in `skipped` with the reason rather than
 * failing the rest; a driver that runs past its deadline is killed with everything it started.
 */
export async function runPeers(options: PeerOptions): Promise<PeersRun> {
  const lifecycles = options.quick === true ? Math.min(options.lifecycles, 100) : options.lifecycles;
  const warmup = options.warmup ?? (options.quick === true ? 20 : 100);
  const result: PeersRun = { points: [], skipped: [] };
  // Generous: 90 s to start, then 200 ms per lifecycle (5 lifecycles/s, far below any peer's rate).
  const timeoutMs =
    options.timeoutMs ?? 90_000 + options.concurrencies.length * 2 * (warmup + lifecycles) * 200;
  const env: Record<string, string> =
    options.postgres === undefined
      ? {}
      : {
          BENCH_PG_HOST: options.postgres.host,
          BENCH_PG_PORT: String(options.postgres.port),
          BENCH_PG_USER: options.postgres.user,
          BENCH_PG_SOCKET_DIR: options.postgres.socketDir,
        };
  for (const peer of options.peers ?? (['dbos', 'restate'] as const)) {
    const driver: DriverOptions = { peer, concurrencies: options.concurrencies, lifecycles, warmup };
    const command = [process.execPath, '--import', 'tsx', driverFile, JSON.stringify(driver)];
    try {
      if (peer === 'restate' && process.getuid?.() !== 0) {
        throw new Error('its network namespace (ip netns, so nothing leaves the machine) needs root');
      }
      result.points.push(
        ...(peer === 'restate'
          ? await inNetworkNamespace(`sandlot-peers-${process.pid}`, (prefix) =>
              runDriver([...prefix, ...command], env, timeoutMs),
            )
          : await runDriver(command, env, timeoutMs)),
      );
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      result.skipped.push({ peer, why });
      process.stderr.write(`peer ${peer} skipped: ${why}\n`);
    }
  }
  return result;
}

/**
 * Runs one driver in a process group of its own (the peer server and Restate's server are its
 * children), forwarding its stderr; kills the whole group when it overruns `timeoutMs` or when
 * this process exits first.
 */
function runDriver(command: string[], env: Record<string, string>, timeoutMs: number): Promise<PeerPoint[]> {
  const [file, ...args] = command;
  return new Promise((resolve, reject) => {
    const child = spawn(file ?? process.execPath, args, {
      cwd: repoRoot,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const killGroup = (signal: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, signal);
      } catch {
        // already gone
      }
    };
    const onExit = () => killGroup('SIGKILL');
    process.once('exit', onExit);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      process.stderr.write(chunk);
      stderr = (stderr + chunk).slice(-4_096);
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup('SIGTERM');
      setTimeout(() => killGroup('SIGKILL'), 5_000).unref();
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      process.removeListener('exit', onExit);
      reject(error);
    });
    // Anything the driver left behind holds its stderr open, and 'close' waits for that.
    child.once('exit', () => killGroup('SIGKILL'));
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      process.removeListener('exit', onExit);
      const line = stdout.split('\n').find((l) => l.startsWith(resultMarker));
      if (code === 0 && line !== undefined) {
        resolve(JSON.parse(line.slice(resultMarker.length)) as PeerPoint[]);
        return;
      }
      const lines = stderr.split('\n').map((l) => l.trim());
      // Killed by a signal, its last words are whatever it was printing then: not a reason.
      const reason =
        lines.find((l) => l.startsWith('peer driver')) ??
        (signal === null ? (lines.filter((l) => l !== '').at(-1) ?? '') : '');
      reject(
        new Error(
          timedOut
            ? `driver killed after ${Math.round(timeoutMs / 1000)} s`
            : `driver exited with ${code ?? signal ?? '?'}${reason === '' ? '' : `: ${reason.slice(0, 300)}`}`,
        ),
      );
    });
  });
}

function parseArgs(argv: string[]): PeerOptions {
  const quick = argv.includes('--quick');
  const valueOf = (flag: string) => {
    const index = argv.indexOf(flag);
    return index === -1 ? undefined : argv[index + 1];
  };
  const concurrencies = (valueOf('--concurrency') ?? (quick ? '1,8' : '1,8,64')).split(',').map(Number);
  const lifecycles = Number(valueOf('--lifecycles') ?? (quick ? 100 : 1000));
  const peers = valueOf('--peers')?.split(',') as PeerOptions['peers'];
  if (
    concurrencies.some((c) => !Number.isInteger(c) || c < 1) ||
    !Number.isInteger(lifecycles) ||
    lifecycles < 1
  ) {
    throw new Error('usage: run.ts [--quick] [--concurrency 1,8,64] [--lifecycles N] [--peers dbos,restate]');
  }
  return { concurrencies, lifecycles, quick, ...(peers === undefined ? {} : { peers }) };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  const { points, skipped } = await runPeers(parseArgs(process.argv.slice(2)));
  console.table(
    points.map((p) => ({ ...p, lifecyclesPerSecond: Math.round(p.lifecyclesPerSecond * 10) / 10 })),
  );
  for (const { peer, why } of skipped) console.log(`${peer} skipped: ${why}`);
  console.log(`peers done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

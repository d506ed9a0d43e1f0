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
  /** Default both. */
  peers?: Array<PeerPoint['peer']>;
}

export type { PeerPoint };

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const driverFile = fileURLToPath(new URL('./driver.ts', import.meta.url));

/**
 * Lifecycles/s per peer, variant and concurrency. A peer that cannot run here (say Restate without
 * network namespaces) is reported on stderr and left out of the answer rather than failing the rest.
 */
export async function runPeers(options: PeerOptions): Promise<PeerPoint[]> {
  const lifecycles = options.quick === true ? Math.min(options.lifecycles, 100) : options.lifecycles;
  const points: PeerPoint[] = [];
  for (const peer of options.peers ?? (['dbos', 'restate'] as const)) {
    const driver: DriverOptions = {
      peer,
      concurrencies: options.concurrencies,
      lifecycles,
      warmup: options.quick === true ? 20 : 100,
    };
    const command = [process.execPath, '--import', 'tsx', driverFile, JSON.stringify(driver)];
    try {
      points.push(
        ...(peer === 'restate'
          ? await inNetworkNamespace(`sandlot-peers-${process.pid}`, (prefix) =>
              runDriver([...prefix, ...command]),
            )
          : await runDriver(command)),
      );
    } catch (error) {
      process.stderr.write(
        `peer ${peer} skipped: ${error instanceof Error ? error.message : String(error)}\n`,
      );
    }
  }
  return points;
}

function runDriver(command: string[]): Promise<PeerPoint[]> {
  const [file, ...args] = command;
  return new Promise((resolve, reject) => {
    const child = spawn(file ?? process.execPath, args, {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.once('error', reject);
    child.once('exit', (code) => {
      const line = stdout.split('\n').find((l) => l.startsWith(resultMarker));
      if (code === 0 && line !== undefined)
        resolve(JSON.parse(line.slice(resultMarker.length)) as PeerPoint[]);
      else reject(new Error(`driver exited with ${code ?? 'a signal'}`));
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
  const points = await runPeers(parseArgs(process.argv.slice(2)));
  console.table(
    points.map((p) => ({ ...p, lifecyclesPerSecond: Math.round(p.lifecyclesPerSecond * 10) / 10 })),
  );
  console.log(`peers done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

// One peer's whole session, in its own process (for Restate, inside the network namespace run.ts
// made): start the stand-ins, the peer server process (engines/<peer>.ts) and, for Restate, the
// Restate server; then, per variant and concurrency, a warm-up and a measured closed-loop run;
// each point is checked (every measured Environment reached Released) and the results are printed
// as one `PEER-RESULT [...]` line on stdout.
//
//   npx tsx bench/peers/driver.ts '{"peer":"dbos","concurrencies":[1,8],"lifecycles":200,"warmup":20}'
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { lifecyclePath } from './front.ts';
import {
  readyMarker,
  resultMarker,
  runLoad,
  type EngineRun,
  type LoadResult,
  type PeerPoint,
} from './load.ts';
import { callIngress, startRestate } from './restate-runtime.ts';
import { startStandIns, type StandIns } from './stand-ins.ts';
import { dropDatabase, peerConnection, peerDatabaseName } from './steps.ts';

export interface DriverOptions {
  peer: PeerPoint['peer'];
  concurrencies: number[];
  lifecycles: number;
  warmup: number;
}

const tenant = 'tenant-a';
const project = 'project-a';
const restateEndpointUrl = 'http://127.0.0.1:9080';
const READY_TIMEOUT_MS = 90_000;

async function main(options: DriverOptions): Promise<PeerPoint[]> {
  // Whatever was started is stopped again, in reverse order, however far start-up got: a server
  // that fails to start must not leave the stand-ins (or Restate) holding this process open.
  const cleanups: Array<() => Promise<void>> = [];
  try {
    const standIns = await startStandIns();
    cleanups.push(() => standIns.close());
    const restateRuntime = options.peer === 'restate' ? await startRestate() : undefined;
    if (restateRuntime !== undefined) cleanups.push(() => restateRuntime.stop());
    const database = peerDatabaseName(options.peer);
    cleanups.push(() => dropDatabase(peerConnection(database, options.peer === 'restate')));
    const server = await startPeerServer(options.peer, standIns, database);
    cleanups.push(() => server.stop());
    await restateRuntime?.register(restateEndpointUrl);
    const points: PeerPoint[] = [];
    for (const variant of ['engine', 'http'] as const) {
      for (const concurrency of options.concurrencies) {
        const run = (count: number, prefix: string) =>
          runVariant(variant, options.peer, server.url, standIns, { concurrency, count, prefix });
        const tag = randomBytes(4).toString('hex');
        await run(options.warmup, `warm-${tag}-`);
        const prefix = `env-${tag}-`;
        const result = await run(options.lifecycles, prefix);
        await expectReleased(server.url, prefix, options.lifecycles);
        points.push({
          peer: options.peer,
          variant,
          concurrency,
          lifecyclesPerSecond: result.lifecyclesPerSecond,
        });
        process.stderr.write(
          `  ${options.peer} ${variant} c=${concurrency}: ${result.lifecyclesPerSecond.toFixed(1)} lifecycles/s\n`,
        );
      }
    }
    return points;
  } finally {
    for (const cleanup of cleanups.reverse()) {
      await cleanup().catch((error: unknown) =>
        process.stderr.write(`  cleanup: ${error instanceof Error ? error.message : String(error)}\n`),
      );
    }
  }
}

async function runVariant(
  variant: PeerPoint['variant'],
  peer: PeerPoint['peer'],
  serverUrl: string,
  standIns: StandIns,
  run: EngineRun,
): Promise<LoadResult> {
  if (variant === 'engine' && peer === 'restate')
    return runLoad(run.concurrency, run.count, run.prefix, callIngress);
  if (variant === 'engine') return postJson<LoadResult>(`${serverUrl}/control/engine-run`, run);
  const tokens = await Promise.all(
    Array.from({ length: run.concurrency }, (_, client) => standIns.sign(`subject-${client}`, tenant)),
  );
  return runLoad(run.concurrency, run.count, run.prefix, async (id, client) => {
    const response = await fetch(`${serverUrl}${lifecyclePath(tenant, project, id)}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens[client] ?? ''}` },
      signal: AbortSignal.timeout(60_000),
    });
    await response.text();
    if (response.status !== 200) throw new Error(`peer front answered HTTP ${response.status} for ${id}`);
  });
}

async function expectReleased(serverUrl: string, prefix: string, expected: number): Promise<void> {
  const response = await fetch(`${serverUrl}/control/released?prefix=${encodeURIComponent(prefix)}`);
  const { released } = (await response.json()) as { released: number };
  if (released !== expected) throw new Error(`${released} of ${expected} Environments reached Released`);
}

async function postJson<T>(url: string, body: unknown): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${url} answered HTTP ${response.status}: ${await response.text()}`);
  return (await response.json()) as T;
}

interface PeerServerProcess {
  url: string;
  stop(): Promise<void>;
}

/** Starts engines/<peer>.ts (under tsx, like this driver) and waits for its PEER-READY line. */
async function startPeerServer(
  peer: PeerPoint['peer'],
  standIns: StandIns,
  database: string,
): Promise<PeerServerProcess> {
  const file = fileURLToPath(new URL(`./engines/${peer}.ts`, import.meta.url));
  const options = JSON.stringify({
    jwksUrl: standIns.jwksUrl,
    authorityUrl: standIns.authorityUrl,
    database,
  });
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', file, options], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Its stderr goes on to ours; the last error line it wrote names the cause if it dies.
  let lastError = '';
  createInterface({ input: child.stderr! }).on('line', (line) => {
    process.stderr.write(`${line}\n`);
    if (/error/i.test(line) && !/^\s+at /.test(line)) lastError = line.trim();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${peer} server not ready in ${READY_TIMEOUT_MS / 1000} s`));
    }, READY_TIMEOUT_MS);
    child.once('exit', (code) => {
      clearTimeout(timer);
      const cause = lastError === '' ? '' : ` (${lastError.slice(0, 200)})`;
      reject(new Error(`${peer} server exited with ${code ?? 'a signal'} before it was ready${cause}`));
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.startsWith(readyMarker)) {
        clearTimeout(timer);
        resolve((JSON.parse(line.slice(readyMarker.length)) as { port: number }).port);
      }
    });
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    async stop() {
      await fetch(`${url}/control/shutdown`, { method: 'POST', signal: AbortSignal.timeout(5_000) }).catch(
        () => undefined,
      );
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const options = JSON.parse(process.argv[2] ?? '{}') as DriverOptions;
  let line = '';
  let code = 0;
  try {
    line = `${resultMarker}${JSON.stringify(await main(options))}\n`;
  } catch (error) {
    process.stderr.write(
      `peer driver (${options.peer}) failed: ${error instanceof Error ? error.stack : String(error)}\n`,
    );
    code = 1;
  }
  // Exit now rather than when the event loop drains: a handle some library left open (a pool, a
  // socket) must not keep the driver, and the bench waiting on it, alive.
  process.stdout.write(line, () => process.exit(code));
}

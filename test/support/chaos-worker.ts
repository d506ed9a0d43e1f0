// A `sandlot worker` child process for chaos tests: started from the repo root exactly as an
// operator would start it, watched until it says it runs, and killed (SIGKILL) or stopped (SIGTERM).
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { fakeAudience, fakeIssuer, startFakeServices, type MirrorOf } from './fake-services.ts';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/**
 * How long a stopped worker may take to exit. Its own shutdown waits up to 10 s for running jobs
 * and 2 s more after aborting them; on a loaded 2-core machine (both cores busy with other work)
 * that plus process exit passed 15 s, so the deadline leaves room for the load, not for a hang.
 */
const STOP_DEADLINE_MS = 45_000;

export interface WorkerProcess {
  pid: number;
  /** stdout and stderr so far, for failure messages. */
  output(): string;
  /** Sends `signal` and waits for the process to be gone (at most STOP_DEADLINE_MS by default). */
  stop(signal: NodeJS.Signals, timeoutMs?: number): Promise<{ code: number | null; signal: string | null }>;
  readonly exited: boolean;
}

const READY = 'sandlot worker running';

/**
 * Production mode's external services for a child process, as stand-ins on 127.0.0.1: the JWKS, and
 * Projects and run selection answering from `mirror` (the test harness's tables), because a worker
 * commits provider results under the provisioning subject's fresh authority.
 */
export async function productionStandIns(
  mirror: MirrorOf,
): Promise<{ settings: Record<string, string>; close(): Promise<void> }> {
  const fake = await startFakeServices({ mirror });
  return {
    settings: {
      SANDLOT_JWT_ISSUER: fakeIssuer,
      SANDLOT_JWT_AUDIENCE: fakeAudience,
      SANDLOT_JWKS_URL: fake.jwksUrl,
      SANDLOT_PROJECTS_URL: fake.projectsUrl,
      SANDLOT_RUN_SELECTION_URL: fake.runSelectionUrl,
    },
    close: () => fake.close(),
  };
}

/** A PostgreSQL URL whose connections use `schema` (pg passes `options` to the server). */
export function databaseUrlFor(baseUrl: string, schema: string): string {
  const url = new URL(baseUrl);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

/**
 * Spawns `node cli/sandlot.mjs worker` with only `env` (plus PATH and HOME) and resolves once it
 * prints its ready line. Rejects, with its output, if it exits first or is not ready in time.
 */
export async function startWorkerProcess(
  env: Record<string, string>,
  {
    readyTimeoutMs = 20_000,
    command = 'worker',
  }: { readyTimeoutMs?: number; command?: 'worker' | 'serve' } = {},
): Promise<WorkerProcess> {
  // `serve` is the all-in-one process: the API and the same workers (production mode with Redis).
  const args = command === 'worker' ? ['worker'] : ['serve', '--port', '0'];
  const readyLine = command === 'worker' ? READY : 'sandlot listening on';
  const child: ChildProcess = spawn(process.execPath, ['cli/sandlot.mjs', ...args], {
    cwd: repoRoot,
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      ...(process.env['HOME'] === undefined ? {} : { HOME: process.env['HOME'] }),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let exited = false;
  const exit = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = true;
      resolve({ code, signal });
    });
  });
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.includes(readyLine)) resolve();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.once('error', reject);
    void exit.then(({ code, signal }) =>
      reject(new Error(`worker exited (code ${code}, signal ${signal}) before it was ready:\n${output}`)),
    );
  });
  // Settled either way below; an exit long after start-up must not surface as an unhandled rejection.
  ready.catch(() => undefined);
  const handle: WorkerProcess = {
    pid: child.pid ?? -1,
    output: () => output,
    get exited() {
      return exited;
    },
    async stop(signal, timeoutMs = STOP_DEADLINE_MS) {
      if (!exited) child.kill(signal);
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`worker ${handle.pid} did not exit ${timeoutMs} ms after ${signal}:\n${output}`));
        }, timeoutMs);
      });
      try {
        return await Promise.race([exit, late]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      ready,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`worker not ready after ${readyTimeoutMs} ms:\n${output}`)),
          readyTimeoutMs,
        );
      }),
    ]);
  } catch (error) {
    if (!exited) await handle.stop('SIGKILL');
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return handle;
}

// Runs the Restate server (the @restatedev/restate-server binary from bench/peers/node_modules)
// for the peer driver: a fresh base directory, telemetry off, warnings-only logging, default ports
// on 127.0.0.1 (ingress 8080, admin 9070). The driver runs inside a network namespace with only
// loopback up, so the version check the server attempts at start-up cannot leave the machine.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { arch, platform, tmpdir } from 'node:os';
import { join } from 'node:path';

export const ingressUrl = 'http://127.0.0.1:8080';
const adminUrl = 'http://127.0.0.1:9070';

export interface RestateRuntime {
  /** Registers the service endpoint (HTTP/2) with the server. */
  register(endpointUrl: string): Promise<void>;
  stop(): Promise<void>;
}

export function restateBinary(): string {
  const require = createRequire(import.meta.url);
  return require.resolve(`@restatedev/restate-server-${platform()}-${arch()}/bin/restate-server`);
}

export async function startRestate(): Promise<RestateRuntime> {
  const baseDir = await mkdtemp(join(tmpdir(), 'sandlot-peers-restate-'));
  const configFile = join(baseDir, 'restate.toml');
  await writeFile(configFile, 'disable-telemetry = true\nlog-filter = "warn"\n');
  const server: ChildProcess = spawn(
    restateBinary(),
    ['--config-file', configFile, '--base-dir', join(baseDir, 'data'), '--no-logo'],
    { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DO_NOT_TRACK: '1' } },
  );
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  const stop = async () => {
    server.kill('SIGTERM');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
    await rm(baseDir, { recursive: true, force: true });
  };
  try {
    await waitFor(`${adminUrl}/health`, 30_000);
    await waitFor(`${ingressUrl}/restate/health`, 30_000);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    async register(endpointUrl) {
      const response = await fetch(`${adminUrl}/deployments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ uri: endpointUrl, force: true }),
        signal: AbortSignal.timeout(30_000),
      });
      const text = await response.text();
      if (!response.ok) throw new Error(`Restate refused the deployment: HTTP ${response.status} ${text}`);
    },
    stop,
  };
}

/** Calls the object through Restate's ingress and waits for the handler's answer. */
export async function callIngress(id: string): Promise<void> {
  const response = await fetch(`${ingressUrl}/PeerEnvironment/${encodeURIComponent(id)}/lifecycle`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
    signal: AbortSignal.timeout(60_000),
  });
  await response.text();
  if (response.status !== 200) throw new Error(`Restate ingress answered HTTP ${response.status}`);
}

async function waitFor(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(1_000) });
      await response.text();
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

// The peers' figures, if bench/peers/run.ts exists and exports `runPeers` (another harness, with
// its own package.json). Imported dynamically: when it is absent, or fails, the report says so and
// goes on. Its result is read leniently: any list of records carrying a peer name, a variant, a
// client count and lifecycles per second.
import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { repoRoot } from '../../test/support/chaos-worker.ts';

export interface PeerPoint {
  peer: string;
  variant: string;
  clients: number;
  lifecyclesPerSecond: number;
}

export interface PeersOutcome {
  points: PeerPoint[];
  raw: unknown;
  note?: string;
}

const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const num = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) ? value : undefined;

/** Every nested record that looks like one measured point. */
function collect(value: unknown, inherited: Partial<PeerPoint>, out: PeerPoint[]): void {
  if (Array.isArray(value)) {
    for (const item of value) collect(item, inherited, out);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  const record = value as Record<string, unknown>;
  const here: Partial<PeerPoint> = { ...inherited };
  const peer = text(record['peer']) ?? text(record['name']) ?? text(record['system']);
  if (peer !== undefined) here.peer = peer;
  const variant = text(record['variant']) ?? text(record['mode']);
  if (variant !== undefined) here.variant = variant;
  const clients = num(record['clients']) ?? num(record['concurrency']);
  if (clients !== undefined) here.clients = clients;
  const rate = num(record['lifecyclesPerSecond']) ?? num(record['throughput']) ?? num(record['perSecond']);
  if (rate !== undefined && here.peer !== undefined && here.clients !== undefined) {
    out.push({
      peer: here.peer,
      variant: here.variant ?? 'http',
      clients: here.clients,
      lifecyclesPerSecond: rate,
    });
    return;
  }
  for (const [key, nested] of Object.entries(record)) {
    if (nested !== null && typeof nested === 'object') {
      // A map keyed by peer or variant name ({ dbos: { http: [...] } }) names its children.
      const named: Partial<PeerPoint> = { ...here };
      if (here.peer === undefined) named.peer = key;
      else if (here.variant === undefined) named.variant = key;
      collect(nested, named, out);
    }
  }
}

export async function runPeersIfPresent(options: {
  n: number;
  clients: number[];
  quick: boolean;
}): Promise<PeersOutcome> {
  const file = join(repoRoot, 'bench', 'peers', 'run.ts');
  if (!existsSync(file))
    return { points: [], raw: null, note: 'bench/peers/run.ts is absent: peers skipped' };
  try {
    const module = (await import(pathToFileURL(file).href)) as { runPeers?: (o: unknown) => unknown };
    if (typeof module.runPeers !== 'function') {
      return { points: [], raw: null, note: 'bench/peers/run.ts exports no runPeers: peers skipped' };
    }
    // Both spellings: ours (n, clients) and bench/peers/run.ts's (lifecycles, concurrencies).
    const raw = await module.runPeers({ ...options, lifecycles: options.n, concurrencies: options.clients });
    const points: PeerPoint[] = [];
    collect(raw, {}, points);
    return points.length > 0
      ? { points, raw }
      : { points, raw, note: 'runPeers answered nothing that names a peer, clients and lifecyclesPerSecond' };
  } catch (error) {
    return {
      points: [],
      raw: null,
      note: `runPeers failed: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
}

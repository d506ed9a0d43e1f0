// Closed-loop load: `concurrency` clients, each starting its next lifecycle as soon as the previous
// one answered, until `count` lifecycles are done. Environment ids are `${prefix}${n}`.
export interface LoadResult {
  seconds: number;
  lifecyclesPerSecond: number;
}

export async function runLoad(
  concurrency: number,
  count: number,
  prefix: string,
  lifecycle: (id: string, client: number) => Promise<void>,
): Promise<LoadResult> {
  let next = 0;
  const started = process.hrtime.bigint();
  const client = async (index: number) => {
    for (let n = next++; n < count; n = next++) await lifecycle(`${prefix}${n}`, index);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, (_, index) => client(index)));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { seconds, lifecyclesPerSecond: count / seconds };
}

/** One measured point, as the driver reports it. */
export interface PeerPoint {
  peer: 'dbos' | 'restate';
  variant: 'engine' | 'http';
  concurrency: number;
  lifecyclesPerSecond: number;
}

/** What a peer server process answers on its control routes (not part of the measured path). */
export interface EngineRun {
  concurrency: number;
  count: number;
  prefix: string;
}

export const readyMarker = 'PEER-READY ';
export const resultMarker = 'PEER-RESULT ';

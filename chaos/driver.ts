// The load driver: `n` Environment lifecycles (chaos/lifecycle.ts), `clients` at a time, each on
// its own seeded path. A lifecycle that fails is recorded (the Recorder has the finding already)
// and, if its Environment exists, released anyway, so that every Environment the driver was told
// exists is expected to end Released.
import type { ChaosClient } from './client.ts';
import {
  type LifecycleContext,
  LifecycleFailure,
  planLifecycle,
  releaseEnvironment,
  runLifecycle,
  type EnvironmentRecord,
} from './lifecycle.ts';
import type { Recorder } from './recorder.ts';

export interface DriveOptions {
  client: ChaosClient;
  recorder: Recorder;
  seed: number;
  n: number;
  clients: number;
  environments: string;
  lifecycleTimeoutMs: number;
  onVolume?: LifecycleContext['onVolume'];
  /** Called with (done, failed) after each lifecycle. */
  onProgress?: (done: number, failed: number) => void;
}

/** The record of Environment `index`, before its lifecycle starts. */
export function newRecord(index: number, plan: EnvironmentRecord['plan']): EnvironmentRecord {
  return {
    index,
    key: `env-${index}`,
    plan,
    environmentId: null,
    operationId: null,
    outcome: null,
    failure: null,
    staleKeys: [],
    trace: [],
    releasedAnswer: null,
    startedAtMs: 0,
    endedAtMs: null,
  };
}

export async function drive(options: DriveOptions): Promise<EnvironmentRecord[]> {
  const { client, recorder } = options;
  const records = Array.from({ length: options.n }, (_, index) =>
    newRecord(index, planLifecycle(options.seed, index)),
  );
  let next = 0;
  let done = 0;
  let failed = 0;
  const lane = async () => {
    while (next < records.length) {
      const record = records[next++] as EnvironmentRecord;
      record.startedAtMs = recorder.elapsed();
      const ctx: LifecycleContext = {
        client,
        recorder,
        environments: options.environments,
        deadlineMs: options.lifecycleTimeoutMs,
        ...(options.onVolume === undefined ? {} : { onVolume: options.onVolume }),
      };
      try {
        await runLifecycle(ctx, record);
      } catch (error) {
        failed++;
        record.outcome = 'failed';
        record.failure = error instanceof Error ? error.message : String(error);
        if (!(error instanceof LifecycleFailure)) {
          recorder.find(
            'lifecycle-stuck',
            `driver error: ${record.failure}`,
            record.environmentId ?? undefined,
          );
        }
        if (record.environmentId !== null) {
          // The Environment exists: it must still end Released, whatever stopped its lifecycle.
          await releaseEnvironment(ctx, record, Date.now() + options.lifecycleTimeoutMs).catch(
            () => undefined,
          );
        }
      }
      record.endedAtMs = recorder.elapsed();
      done++;
      options.onProgress?.(done, failed);
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.clients, options.n) }, lane));
  return records;
}

// An Environment's journal read through a running server's journal route (`history --url`,
// `inspect --server`), so these commands work beside an embedded `serve`, which holds the database.
// The route shows each event's visible fields only (never provider options, selections or receipts).
import type { RemoteOptions } from './remote.ts';

export interface RemoteJournalOptions extends RemoteOptions {
  /** Where the Environment is looked up for a bare env_…. */
  project?: string;
}

export interface RemoteJournalRow {
  environmentId: string;
  revision: number;
  recordedAt: string;
  event: Record<string, unknown>;
  /** null: journaled before sources were recorded. */
  source: string | null;
  actor: string;
  from: unknown;
  to: unknown;
}

/** Every journal row of the Environment `target` (<project>/<run>/<env>, or env_… with --project). */
export async function readJournalThroughApi(
  target: string,
  options: RemoteJournalOptions,
): Promise<RemoteJournalRow[]> {
  const [{ connect, expect }, { pathOf, resolve }] = await Promise.all([
    import('./remote.ts'),
    import('./envs.ts'),
  ]);
  const remote = await connect(options);
  const address = await resolve(remote, target, options.project);
  const answer = await remote.client.call(
    'get',
    '/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/journal',
    { path: pathOf(address) },
  );
  return expect(answer, [200]).entries.map((e) => ({
    environmentId: address.environmentId,
    revision: e.revision,
    recordedAt: e.recordedAt,
    event: e.event,
    source: e.source,
    actor: e.actor,
    from: e.from ?? null,
    to: e.to ?? null,
  }));
}

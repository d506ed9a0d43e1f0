// The Environment's journal as callers may read it: each transition with the event's fences and
// identifiers, never the provider options, run selection or receipts some events carry.
import { readJournal, type JournalSource } from '../store/journal.ts';
import { Guard, type AuthorityDeps } from './guard.ts';
import { readOwnedEnvironment, type EnvironmentAddress } from './owned.ts';
import type { Caller } from './ports.ts';

export interface JournalView {
  revision: number;
  event: Record<string, unknown>;
  from: unknown;
  to: unknown;
  actor: string;
  /** Where the event came from; null on rows journaled before sources were recorded. */
  source: JournalSource | null;
  recordedAt: string;
}

const visibleFields = [
  'type',
  'idempotencyKey',
  'expectedLifecycleGeneration',
  'operationId',
  'attemptId',
  'kind',
  'resourceGeneration',
  'providerFence',
  'fencingGeneration',
  'networkPolicyGeneration',
  'phase',
  'finished',
] as const;

/** The event as callers may see it (also what `sandlot history` and the inspector show). */
export function visibleEvent(event: unknown): Record<string, unknown> {
  const source = (event ?? {}) as Record<string, unknown>;
  const shown: Record<string, unknown> = {};
  for (const field of visibleFields) if (source[field] !== undefined) shown[field] = source[field];
  const error = source['error'] as { code?: unknown } | undefined;
  if (error?.code !== undefined) shown['errorCode'] = error.code;
  return shown;
}

export class JournalService {
  constructor(private readonly deps: AuthorityDeps) {}

  async read(caller: Caller, address: EnvironmentAddress): Promise<JournalView[]> {
    const guard = new Guard(this.deps, caller, address.projectId, ['ReadProjects']);
    const entries = await guard.around(async () => {
      await readOwnedEnvironment(this.deps.db, caller, address);
      return readJournal(this.deps.db, address.environmentId);
    });
    return entries.map((e) => ({
      revision: e.revision,
      event: visibleEvent(e.event),
      from: e.fromState,
      to: e.toState,
      actor: e.actor,
      source: e.source,
      recordedAt: new Date(e.recordedAt).toISOString(),
    }));
  }
}

// `sandlot audit`: checks a live system's invariants (docs/architecture.md) against PostgreSQL and
// the provider's actual resources, and reports every breach with counts and IDs. Findings:
//   - multipleCurrentLeases: an Environment with more than one lease in a current state;
//   - orphans: a live provider resource no lease (by owner hash and provider fence) and no cleanup
//     record (by resource ID) accounts for;
//   - uncoveredTerminal: a live resource of a Released or Failed lease that no unreleased cleanup
//     record covers;
//   - journalGaps: an Environment whose journal revisions are not exactly 1..its revision;
//   - disallowedTransitions: a journal row whose to_state is not what the machine, replayed from its
//     initial state with the journaled input and events, reaches;
//   - callsWithoutAttempt: a logged provider call with no attempt created before it (simulated only);
//   - workspaceConflicts: an open cleanup record whose late resource could not hold its Workspace
//     volume (another lease held it): two sandboxes may mount one Workspace until it is released.
// Attempts past their deadline and cleanup claims past their expiry are legitimate (expiry proves
// nothing about the call): they are listed as expectedUnresolved with their age, never as findings.
// The provider is reached only through the port types: the caller (cli/audit.ts) picks it.
import { initialTransition, transition, type AnyMachineSnapshot } from 'xstate';
import { isDeepStrictEqual } from 'node:util';
import type {
  InventoryEntry,
  ProviderInventory,
  ProviderOptionsSnapshot,
  SandboxProvider,
} from '../providers/provider.ts';
import {
  auditCleanups,
  auditEnvironmentsPage,
  auditLeases,
  callsWithoutAttempt,
  environmentsWithManyCurrentLeases,
  expiredCleanupClaims,
  journalsOf,
  openWorkspaceConflicts,
  overdueUnresolvedAttempts,
  type AuditCleanup,
  type AuditEnvironment,
  type AuditLease,
  type MultipleCurrentLeases,
  type OpenWorkspaceConflict,
} from '../store/audit-queries.ts';
import type { Database } from '../store/db.ts';
import type { JournalEntry } from '../store/journal.ts';
import { COMPACTED } from '../store/prune.ts';
import { environmentDefinition } from './environment-definition.ts';

export interface AuditOptions {
  db: Database;
  provider: SandboxProvider;
  /** Check the simulated provider's call log (its table exists only where it is configured). */
  callLog: boolean;
  /** Deadline of each provider read (default 30 s). */
  callTimeoutMs?: number;
  now?: () => Date;
}

export interface AuditResource {
  resourceId: string;
  environmentId: string;
  operationId: string;
  ownerHash: string;
  providerFence: number;
}

export interface JournalGap {
  environmentId: string;
  revision: number;
  /** Revisions in 1..revision with no journal row. */
  missing: number[];
  /** Journal rows outside 1..revision. */
  extra: number[];
}

export interface DisallowedTransition {
  environmentId: string;
  revision: number;
  eventType: string;
  /** What the replayed machine reached (null: the event was not accepted at all). */
  replayed: unknown;
  journaled: unknown;
}

export interface CallWithoutAttempt {
  callId: number;
  operation: string;
  operationId: string | null;
  ownerHash: string | null;
  providerFence: number | null;
  calledAt: string;
}

export interface AuditFindings {
  multipleCurrentLeases: MultipleCurrentLeases[];
  orphans: AuditResource[];
  uncoveredTerminal: (AuditResource & { leaseState: string; resourceGeneration: number })[];
  journalGaps: JournalGap[];
  disallowedTransitions: DisallowedTransition[];
  callsWithoutAttempt: CallWithoutAttempt[];
  workspaceConflicts: OpenWorkspaceConflict[];
}

export interface ExpectedUnresolved {
  attempts: {
    attemptId: string;
    environmentId: string;
    operationId: string;
    kind: string;
    state: string;
    deadlineAt: string;
    ageMs: number;
  }[];
  cleanupClaims: {
    cleanupId: string;
    environmentId: string;
    resourceId: string;
    claimExpiresAt: string;
    ageMs: number;
  }[];
}

export interface AuditReport {
  auditedAt: string;
  provider: string;
  /** How resources were found: the provider's own inventory, or listOwned per lease and cleanup. */
  inventory: 'inventory' | 'listOwned';
  callLogChecked: boolean;
  checked: { environments: number; journalRows: number; leases: number; cleanups: number; resources: number };
  counts: Record<keyof AuditFindings, number>;
  findings: AuditFindings;
  expectedUnresolved: ExpectedUnresolved;
  /** Total findings: 0 is a clean audit. */
  total: number;
}

const ENVIRONMENT_PAGE = 200;

/** Whether a provider offers the optional inventory capability (providers/provider.ts). */
const hasInventory = <P extends object>(provider: P): provider is P & ProviderInventory =>
  typeof (provider as Partial<ProviderInventory>).inventory === 'function';

export async function runAudit(options: AuditOptions): Promise<AuditReport> {
  const { db, provider } = options;
  const now = (options.now ?? (() => new Date()))();
  const [leases, cleanups] = await Promise.all([auditLeases(db), auditCleanups(db)]);
  const { entries, source } = await providerResources(provider, leases, cleanups, options.callTimeoutMs);
  const resources = classifyResources(entries, leases, cleanups);
  const journal = await auditJournals(db);
  const findings: AuditFindings = {
    multipleCurrentLeases: await environmentsWithManyCurrentLeases(db),
    orphans: resources.orphans,
    uncoveredTerminal: resources.uncoveredTerminal,
    journalGaps: journal.gaps,
    disallowedTransitions: journal.disallowed,
    callsWithoutAttempt: options.callLog
      ? (await callsWithoutAttempt(db)).map((c) => ({ ...c, calledAt: new Date(c.calledAt).toISOString() }))
      : [],
    workspaceConflicts: await openWorkspaceConflicts(db),
  };
  const counts = Object.fromEntries(
    Object.entries(findings).map(([key, list]) => [key, (list as unknown[]).length]),
  ) as AuditReport['counts'];
  return {
    auditedAt: now.toISOString(),
    provider: provider.identity.providerId,
    inventory: source,
    callLogChecked: options.callLog,
    checked: {
      environments: journal.environments,
      journalRows: journal.rows,
      leases: leases.length,
      cleanups: cleanups.length,
      resources: entries.length,
    },
    counts,
    findings,
    expectedUnresolved: await expectedUnresolved(db, now),
    total: Object.values(counts).reduce((a, b) => a + b, 0),
  };
}

/** Every live resource: the provider's inventory when it has one, else listOwned per owner and fence. */
async function providerResources(
  provider: SandboxProvider,
  leases: readonly AuditLease[],
  cleanups: readonly AuditCleanup[],
  timeoutMs = 30_000,
): Promise<{ entries: InventoryEntry[]; source: AuditReport['inventory'] }> {
  const callOptions = () => ({
    signal: AbortSignal.timeout(timeoutMs),
    deadline: new Date(Date.now() + timeoutMs),
  });
  if (hasInventory(provider))
    return { entries: await provider.inventory(callOptions()), source: 'inventory' };
  const queries = new Map<
    string,
    { ownerHash: string; providerFence: number; options: ProviderOptionsSnapshot }
  >();
  for (const lease of leases) {
    if (lease.ownerHash === null) continue;
    queries.set(`${lease.ownerHash}/${lease.providerFence}`, {
      ownerHash: lease.ownerHash,
      providerFence: lease.providerFence,
      options: lease.providerOptions,
    });
  }
  for (const c of cleanups) {
    queries.set(`${c.ownerHash}/${c.providerFence}`, {
      ownerHash: c.ownerHash,
      providerFence: c.providerFence,
      options: c.providerOptions,
    });
  }
  const byId = new Map<string, InventoryEntry>();
  for (const query of queries.values()) {
    const found = await provider.listOwned(
      { owner: { ownerHash: query.ownerHash, providerFence: query.providerFence }, options: query.options },
      callOptions(),
    );
    for (const r of found) byId.set(r.resourceId, { resourceId: r.resourceId, owner: r.owner });
  }
  return { entries: [...byId.values()], source: 'listOwned' };
}

function classifyResources(
  entries: readonly InventoryEntry[],
  leases: readonly AuditLease[],
  cleanups: readonly AuditCleanup[],
): Pick<AuditFindings, 'orphans' | 'uncoveredTerminal'> {
  const leaseByOwner = new Map<string, AuditLease>();
  for (const lease of leases) {
    if (lease.ownerHash !== null) leaseByOwner.set(`${lease.ownerHash}/${lease.providerFence}`, lease);
  }
  const cleanupsByResource = new Map<string, AuditCleanup[]>();
  for (const c of cleanups)
    cleanupsByResource.set(c.resourceId, [...(cleanupsByResource.get(c.resourceId) ?? []), c]);

  const orphans: AuditFindings['orphans'] = [];
  const uncoveredTerminal: AuditFindings['uncoveredTerminal'] = [];
  for (const { resourceId, owner } of entries) {
    const resource: AuditResource = {
      resourceId,
      environmentId: owner.environmentId,
      operationId: owner.operationId,
      ownerHash: owner.ownerHash,
      providerFence: owner.providerFence,
    };
    const lease = leaseByOwner.get(`${owner.ownerHash}/${owner.providerFence}`);
    const records = cleanupsByResource.get(resourceId) ?? [];
    if (lease === undefined) {
      if (records.length === 0) orphans.push(resource);
      continue;
    }
    const terminal = lease.state === 'Released' || lease.state === 'Failed';
    if (terminal && !records.some((c) => c.state !== 'Released')) {
      uncoveredTerminal.push({
        ...resource,
        leaseState: lease.state,
        resourceGeneration: lease.resourceGeneration,
      });
    }
  }
  return { orphans, uncoveredTerminal };
}

async function auditJournals(db: Database): Promise<{
  environments: number;
  rows: number;
  gaps: JournalGap[];
  disallowed: DisallowedTransition[];
}> {
  const result = {
    environments: 0,
    rows: 0,
    gaps: [] as JournalGap[],
    disallowed: [] as DisallowedTransition[],
  };
  let after: string | null = null;
  for (;;) {
    const page: AuditEnvironment[] = await auditEnvironmentsPage(db, after, ENVIRONMENT_PAGE);
    if (page.length === 0) return result;
    const journal = await journalsOf(
      db,
      page.map((e) => e.environmentId),
    );
    const byEnvironment = new Map<string, JournalEntry[]>();
    for (const entry of journal) {
      byEnvironment.set(entry.environmentId, [...(byEnvironment.get(entry.environmentId) ?? []), entry]);
    }
    for (const environment of page) {
      const entries = byEnvironment.get(environment.environmentId) ?? [];
      result.environments += 1;
      result.rows += entries.length;
      const gap = journalGap(environment, entries);
      if (gap !== null) {
        result.gaps.push(gap);
        continue; // A journal with a hole cannot be replayed past it.
      }
      // A compacted journal has no start to replay from; its summary stands for what was checked.
      if (compactedThrough(entries) > 0) continue;
      const mismatch = replayJournal(environment.environmentId, entries);
      if (mismatch !== null) result.disallowed.push(mismatch);
    }
    after = page.at(-1)?.environmentId ?? null;
  }
}

/** Revisions 1..n that a compacted journal's summary row (revision 0) stands for, else 0. */
export function compactedThrough(entries: readonly JournalEntry[]): number {
  const first = entries[0];
  if (first?.revision !== 0 || first.eventType !== COMPACTED) return 0;
  const through = (first.event as { through?: unknown } | null)?.through;
  return typeof through === 'number' ? through : 0;
}

/**
 * Revisions must be exactly 1..revision, each once (the primary key rules out repeats); in a
 * compacted journal (store/prune.ts), the summary at revision 0 and then through+1..revision.
 */
export function journalGap(
  environment: AuditEnvironment,
  entries: readonly JournalEntry[],
): JournalGap | null {
  const through = compactedThrough(entries);
  const rows = through > 0 ? entries.slice(1) : entries;
  const present = new Set(rows.map((e) => e.revision));
  const missing: number[] = [];
  for (let r = through + 1; r <= environment.revision; r++) if (!present.has(r)) missing.push(r);
  const extra = rows.map((e) => e.revision).filter((r) => r <= through || r > environment.revision);
  if (missing.length === 0 && extra.length === 0) return null;
  return { environmentId: environment.environmentId, revision: environment.revision, missing, extra };
}

/**
 * Replays a contiguous journal through the machine: revision 1's input through the initial
 * transition, then every later event through `transition`. Returns the first row whose to_state the
 * replay does not reach (later rows would only repeat the divergence), or null.
 */
export function replayJournal(
  environmentId: string,
  entries: readonly JournalEntry[],
): DisallowedTransition | null {
  const { machine } = environmentDefinition;
  let snapshot: AnyMachineSnapshot | null = null;
  for (const entry of entries) {
    const event = (entry.event ?? {}) as { type?: unknown; input?: unknown };
    const mismatch = (replayed: unknown): DisallowedTransition => ({
      environmentId,
      revision: entry.revision,
      eventType: entry.eventType,
      replayed,
      journaled: entry.toState,
    });
    let next: AnyMachineSnapshot;
    try {
      if (snapshot === null) {
        if (event.type !== 'xstate.init') return mismatch(null);
        [next] = initialTransition(machine, event.input as never);
      } else {
        [next] = transition(machine, snapshot, event as never);
        // A journaled event was accepted: one the machine ignores from here is not a transition.
        if (next === snapshot) return mismatch(null);
      }
    } catch {
      return mismatch(null);
    }
    if (next.status === 'error' || !sameState(next.value, entry.toState)) return mismatch(next.value);
    snapshot = next;
  }
  return null;
}

/**
 * Equal state values; a row journaled by an older machine version is compared after the snapshot
 * migrations (version 2 added the cleanup region), as a stored snapshot would be.
 */
function sameState(replayed: unknown, journaled: unknown): boolean {
  if (isDeepStrictEqual(replayed, journaled)) return true;
  let value = journaled;
  for (let version = 1; version < environmentDefinition.version; version++) {
    const migration = environmentDefinition.migrations[version];
    if (migration === undefined) return false;
    try {
      value = (migration({ value, context: {} }) as { value: unknown }).value;
    } catch {
      return false;
    }
    if (isDeepStrictEqual(replayed, value)) return true;
  }
  return false;
}

async function expectedUnresolved(db: Database, now: Date): Promise<ExpectedUnresolved> {
  const [attempts, claims] = await Promise.all([
    overdueUnresolvedAttempts(db, now),
    expiredCleanupClaims(db, now),
  ]);
  const age = (at: Date) => Math.max(0, now.getTime() - new Date(at).getTime());
  return {
    attempts: attempts.map((a) => ({
      ...a,
      deadlineAt: new Date(a.deadlineAt).toISOString(),
      ageMs: age(a.deadlineAt),
    })),
    cleanupClaims: claims.map((c) => ({
      ...c,
      claimExpiresAt: new Date(c.claimExpiresAt).toISOString(),
      ageMs: age(c.claimExpiresAt),
    })),
  };
}

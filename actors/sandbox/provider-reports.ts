// Provider lifecycle reports, the actor side: `recordReport` keeps one durable, idempotent record
// per report and reconciles it against the Environment's current lease, in one runtime step (under
// the Environment lock, in one transaction with any event it feeds the machine).
//
// A report is a claim, not proof: a sandbox said to be terminated may still run. So an applied
// report never releases anything. It asks the machine for a fresh exact observation instead, with
// the lease's own fences: `sandbox.describe` for an Active lease (the describe's answer decides,
// e.g. `sandbox.lost` on an exact absence), `sandbox.reconcile` for a lease in
// ReconciliationRequired (an exact owner listing). A lease in Provisioning or Releasing already has
// a provider call in flight whose exact result decides, so nothing is sent. The kind does not change
// this: it is recorded for audit. No HTTP route reaches this yet (http/routes/provider-reports.ts).
import { problemClass } from '../../lib/errors.ts';
import { z } from 'zod';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import { PRINTABLE_TEXT } from '../../lib/limits.ts';
import {
  generationSchema,
  identifierSchema,
  instantSchema,
  type EnvironmentEvent,
} from '../../machines/environment-events.ts';
import type { Queryable } from '../../store/db.ts';
import { readCurrentLease, type LeaseRow } from '../../store/leases.ts';
import {
  insertReport,
  markReportEventCommitted,
  readReport,
  reportKinds,
  type NewReport,
  type ReportEventType,
  type ReportOutcome,
  type ReportRow,
} from '../../store/provider-reports.ts';
import { ActorError } from '../errors.ts';
import type { ActorRuntime } from '../runtime.ts';

const text = z.string().min(1).max(256).regex(PRINTABLE_TEXT, 'must be printable text');

/** One report as a provider sends it; (providerId, reportId) is its idempotency key. */
export const providerReportSchema = z.strictObject({
  providerId: identifierSchema,
  reportId: identifierSchema,
  environmentId: text,
  operationId: text,
  resourceGeneration: generationSchema,
  providerFence: generationSchema,
  resourceId: text,
  kind: z.enum(reportKinds),
  /** The provider's clock when it saw what it reports. */
  observedAt: instantSchema,
});
export type ProviderReport = z.infer<typeof providerReportSchema>;

/** The same report key was sent before with a different body: nothing was changed. */
export class ProviderReportConflictError extends problemClass(
  { code: 'provider-report-conflict', status: 409, title: 'Provider report conflict' },
  ActorError,
) {
  constructor(readonly key: { providerId: string; reportId: string }) {
    super(`report ${key.reportId} of provider ${key.providerId} was recorded with another body`);
  }
}

export interface RecordedReport {
  /** True when this key was recorded before with the same body: the saved record, unchanged. */
  replayed: boolean;
  record: ReportRow;
}

export interface ReportDeps {
  db: Queryable;
  runtime: ActorRuntime<EnvironmentEvent>;
}

/** The report's canonical body digest: equal bodies, however serialised, have equal digests. */
export const reportDigest = (report: ProviderReport): string => sha256Hex(canonicalJson(report));

/**
 * Records the report once and reconciles it against the current lease. `now` is when it was
 * received. A replay (same key, same body) returns the saved record and changes nothing; the same
 * key with another body throws `ProviderReportConflictError`. An Environment that does not exist
 * throws `EnvironmentNotFoundError` and records nothing. A quarantined Environment keeps the record
 * (its event is not delivered) and throws `SnapshotQuarantinedError`, like every runtime step.
 */
export async function recordReport(
  deps: ReportDeps,
  input: ProviderReport,
  now: Date,
): Promise<RecordedReport> {
  const report = providerReportSchema.parse(input);
  const digest = reportDigest(report);
  // Rows are final once committed, so a replay is answered without the lock.
  const saved = await readReport(deps.db, report);
  if (saved !== null) return replayOf(saved, report, digest);

  const { value, sent } = await deps.runtime.step(
    report.environmentId,
    async (tx) => {
      const existing = await readReport(tx, report);
      if (existing !== null) return { event: null, value: replayOf(existing, report, digest) };
      const lease = await readCurrentLease(tx, report.environmentId);
      const outcome = reconcile(report, lease);
      const event = outcome === 'applied' && lease !== null ? eventFor(lease) : null;
      const row: NewReport = {
        ...report,
        bodyDigest: digest,
        observedAt: new Date(report.observedAt),
        receivedAt: now,
        outcome,
        lease:
          lease === null
            ? null
            : {
                resourceGeneration: lease.resourceGeneration,
                providerFence: lease.providerFence,
                state: lease.state,
                revision: lease.revision,
              },
        eventType: event?.type ?? null,
      };
      if (!(await insertReport(tx, row))) {
        // Recorded meanwhile by a request that locked another Environment (same key, other body).
        const raced = await readReport(tx, report);
        if (raced === null) throw new Error(`report ${report.reportId} vanished after a conflict`);
        return { event: null, value: replayOf(raced, report, digest) };
      }
      return { event, value: { replayed: false, record: { ...row, eventRevision: null } } };
    },
    {
      actor: `provider:${report.providerId}`,
      source: 'provider',
      // Runs only when the machine accepted the event: the record names the revision it made.
      beforeCommit: (tx, row) => markReportEventCommitted(tx, report, row.revision),
    },
  );
  if (sent?.accepted !== true) return value;
  return { ...value, record: { ...value.record, eventRevision: sent.row.revision } };
}

function replayOf(saved: ReportRow, report: ProviderReport, digest: string): RecordedReport {
  if (saved.bodyDigest !== digest) throw new ProviderReportConflictError(report);
  return { replayed: true, record: saved };
}

/**
 * Compares the report with the current lease: it applies only to that lease, exactly, under the
 * lease's provider (and resource, once the lease holds one).
 */
export function reconcile(report: ProviderReport, lease: LeaseRow | null): ReportOutcome {
  if (lease === null) return 'no-lease';
  if (report.operationId !== lease.operationId || report.resourceGeneration !== lease.resourceGeneration)
    return 'not-current';
  if (report.providerFence !== lease.providerFence) return 'stale-fence';
  if (report.providerId !== lease.providerIdentity['providerId']) return 'not-current';
  if (lease.resource !== null && lease.resource.resourceId !== report.resourceId) return 'not-current';
  return 'applied';
}

type ObservationEvent = Extract<EnvironmentEvent, { type: ReportEventType }>;

/** The read-only event that asks for a fresh exact observation of the lease, if its state takes one. */
function eventFor(lease: LeaseRow): ObservationEvent | null {
  const fences = { resourceGeneration: lease.resourceGeneration, providerFence: lease.providerFence };
  if (lease.state === 'Active') return { type: 'sandbox.describe', ...fences };
  if (lease.state === 'ReconciliationRequired')
    return { type: 'sandbox.reconcile', operationId: lease.operationId, ...fences };
  return null;
}

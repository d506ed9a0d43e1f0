// Provider lifecycle report rows (migration 0006). One row per report, keyed by its idempotency key
// (provider_id, report_id), written once under the Environment lock and never changed afterwards
// but for the revision of the event it fed, set in the same transaction. So a row read outside the
// lock is already final, and a replay can be answered from it.
import type { Queryable } from './db.ts';

export const reportKinds = ['interrupted', 'terminated', 'relocated'] as const;
export type ReportKind = (typeof reportKinds)[number];

export const reportOutcomes = ['applied', 'stale-fence', 'no-lease', 'not-current'] as const;
export type ReportOutcome = (typeof reportOutcomes)[number];

/** The read-only events an applied report may ask the machine for. */
export type ReportEventType = 'sandbox.describe' | 'sandbox.reconcile';

export interface ReportRow {
  providerId: string;
  reportId: string;
  bodyDigest: string;
  environmentId: string;
  operationId: string;
  resourceGeneration: number;
  providerFence: number;
  resourceId: string;
  kind: ReportKind;
  observedAt: Date;
  receivedAt: Date;
  outcome: ReportOutcome;
  /** The current lease the report was compared with (null for `no-lease`). */
  lease: { resourceGeneration: number; providerFence: number; state: string; revision: number } | null;
  eventType: ReportEventType | null;
  /** The Environment revision the event committed at; null when none was sent or it was ignored. */
  eventRevision: number | null;
}

const columns = `provider_id AS "providerId", report_id AS "reportId", body_digest AS "bodyDigest",
  environment_id AS "environmentId", operation_id AS "operationId",
  resource_generation AS "resourceGeneration", provider_fence AS "providerFence",
  resource_id AS "resourceId", kind, observed_at AS "observedAt", received_at AS "receivedAt", outcome,
  lease_resource_generation AS "leaseResourceGeneration", lease_provider_fence AS "leaseProviderFence",
  lease_state AS "leaseState", lease_revision::int AS "leaseRevision", event_type AS "eventType",
  event_revision::int AS "eventRevision"`;

type Flat = Omit<ReportRow, 'lease'> & {
  leaseResourceGeneration: number | null;
  leaseProviderFence: number | null;
  leaseState: string | null;
  leaseRevision: number | null;
};

function fromFlat(flat: Flat): ReportRow {
  const { leaseResourceGeneration, leaseProviderFence, leaseState, leaseRevision, ...rest } = flat;
  const lease =
    leaseRevision === null || leaseResourceGeneration === null || leaseProviderFence === null
      ? null
      : {
          resourceGeneration: leaseResourceGeneration,
          providerFence: leaseProviderFence,
          state: leaseState ?? '',
          revision: leaseRevision,
        };
  return { ...rest, lease };
}

export type NewReport = Omit<ReportRow, 'eventRevision'>;

/**
 * Inserts the report unless its key exists already; false when it did (a concurrent first write of
 * the same key: the insert waits for it to commit, and the caller reads what it wrote).
 */
export async function insertReport(tx: Queryable, r: NewReport): Promise<boolean> {
  const { rowCount } = await tx.query(
    `INSERT INTO provider_lifecycle_reports (provider_id, report_id, body_digest, environment_id,
       operation_id, resource_generation, provider_fence, resource_id, kind, observed_at, received_at,
       outcome, lease_resource_generation, lease_provider_fence, lease_state, lease_revision, event_type)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
     ON CONFLICT (provider_id, report_id) DO NOTHING`,
    [
      r.providerId,
      r.reportId,
      r.bodyDigest,
      r.environmentId,
      r.operationId,
      r.resourceGeneration,
      r.providerFence,
      r.resourceId,
      r.kind,
      r.observedAt,
      r.receivedAt,
      r.outcome,
      r.lease?.resourceGeneration ?? null,
      r.lease?.providerFence ?? null,
      r.lease?.state ?? null,
      r.lease?.revision ?? null,
      r.eventType,
    ],
  );
  return rowCount === 1;
}

/** The machine accepted the report's event: the revision it committed at, in the same transaction. */
export async function markReportEventCommitted(
  tx: Queryable,
  key: { providerId: string; reportId: string },
  revision: number,
): Promise<void> {
  await tx.query(
    `UPDATE provider_lifecycle_reports SET event_revision = $3
      WHERE provider_id = $1 AND report_id = $2 AND event_type IS NOT NULL`,
    [key.providerId, key.reportId, revision],
  );
}

export async function readReport(
  q: Queryable,
  key: { providerId: string; reportId: string },
): Promise<ReportRow | null> {
  const { rows } = await q.query<Flat>(
    `SELECT ${columns} FROM provider_lifecycle_reports WHERE provider_id = $1 AND report_id = $2`,
    [key.providerId, key.reportId],
  );
  const row = rows[0];
  return row === undefined ? null : fromFlat(row);
}

export async function readReportsOf(q: Queryable, environmentId: string): Promise<ReportRow[]> {
  const { rows } = await q.query<Flat>(
    `SELECT ${columns} FROM provider_lifecycle_reports WHERE environment_id = $1
      ORDER BY received_at, provider_id, report_id`,
    [environmentId],
  );
  return rows.map(fromFlat);
}

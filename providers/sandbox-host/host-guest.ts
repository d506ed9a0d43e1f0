// The reference host's guest channel: how the guest of a sandbox tells its host that its
// configuration completed, so that the host-signed describe can say `configured`. The reference
// host runs no guest (docs/sandbox-host.md); what stands for one is declared (`guest.configured` in
// the host declaration):
// - `on-report` (the default): the host waits for the guest's own report, a file the guest's
//   workload writes (reportGuestConfigured); until then it describes the sandbox as started;
// - `at-start`: the reference guest has nothing to configure, so it reports configured as soon as
//   its sandbox is recorded, by writing the same report.
// Invariants: `configured` is only ever read from a report, never inferred from a record or from
// `started`; a report counts only for the record it names (its key and the provision attempt that
// recorded it); an unreadable or foreign report is ignored (the sandbox stays started), never taken
// as configured; a release removes the report before the record.
import { readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { syncPath, writeDurably } from './durable-file.ts';

export const guestModes = ['on-report', 'at-start'] as const;
export type GuestMode = (typeof guestModes)[number];

/** What the guest writes when its configuration completed: one file per sandbox, named by its key. */
export const guestReportSchema = z.strictObject({
  key: z.string().regex(/^[0-9a-f]{64}$/),
  /** The provision attempt that recorded the sandbox (its record's `provisionedBy`). */
  provisionedBy: z.string().min(1).max(256),
  phase: z.literal('configured'),
  configuredAt: z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'an ISO instant'),
});
export type GuestReport = z.infer<typeof guestReportSchema>;

/** What a describe says of the guest, in the signed result's `guest` member. */
export type GuestState = { phase: 'started' } | { phase: 'configured'; configuredAt: string };

/** The parts of a sandbox record a report is bound to. */
export interface GuestSandbox {
  key: string;
  provisionedBy: string;
}

export interface HostGuest {
  /** The sandbox was recorded (or read back): an `at-start` guest reports configured now. */
  started(sandbox: GuestSandbox): Promise<void>;
  /** What the guest reported for this sandbox; `ignored` says why a report present did not count. */
  observe(sandbox: GuestSandbox): Promise<{ state: GuestState; ignored: string | null }>;
  /** The sandbox is being released: its report, if any, is removed. */
  released(key: string): Promise<void>;
}

/** Where a host's guests leave their reports: beside the sandbox records, in their own directory. */
export const guestReportsDir = (sandboxesDir: string): string => join(sandboxesDir, 'guests');

const reportPath = (sandboxesDir: string, key: string) => join(guestReportsDir(sandboxesDir), `${key}.json`);

/** The guest's side: reports that the sandbox's configuration completed at `at` (durably). */
export async function reportGuestConfigured(
  sandboxesDir: string,
  sandbox: GuestSandbox,
  at: Date,
): Promise<GuestReport> {
  const report = guestReportSchema.parse({
    key: sandbox.key,
    provisionedBy: sandbox.provisionedBy,
    phase: 'configured',
    configuredAt: at.toISOString(),
  });
  await writeDurably(
    guestReportsDir(sandboxesDir),
    reportPath(sandboxesDir, sandbox.key),
    JSON.stringify(report),
  );
  return report;
}

type Read = { report: GuestReport } | { absent: true } | { invalid: string };

async function readReport(sandboxesDir: string, key: string): Promise<Read> {
  let text: string;
  try {
    text = await readFile(reportPath(sandboxesDir, key), 'utf8');
  } catch (error) {
    // Only a missing file is "no report"; any other read failure leaves the describe unanswered.
    if ((error as { code?: unknown }).code === 'ENOENT') return { absent: true };
    throw error;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { invalid: 'not JSON' };
  }
  const parsed = guestReportSchema.safeParse(value);
  return parsed.success ? { report: parsed.data } : { invalid: 'not a guest report' };
}

/** The report that counts for this sandbox, or why the one present does not. */
async function boundReport(sandboxesDir: string, sandbox: GuestSandbox): Promise<Read> {
  const read = await readReport(sandboxesDir, sandbox.key);
  if (!('report' in read)) return read;
  const { report } = read;
  if (report.key !== sandbox.key || report.provisionedBy !== sandbox.provisionedBy) {
    return { invalid: 'it names another sandbox or provision' };
  }
  return read;
}

/** The declared guest of a reference host whose sandbox records live in `sandboxesDir`. */
export function createReferenceGuest(sandboxesDir: string, mode: GuestMode, now: () => Date): HostGuest {
  return {
    async started(sandbox) {
      if (mode !== 'at-start') return;
      if ('report' in (await boundReport(sandboxesDir, sandbox))) return;
      await reportGuestConfigured(sandboxesDir, sandbox, now());
    },

    async observe(sandbox) {
      const read = await boundReport(sandboxesDir, sandbox);
      if ('report' in read) {
        return { state: { phase: 'configured', configuredAt: read.report.configuredAt }, ignored: null };
      }
      const ignored =
        'invalid' in read ? `guest report for sandbox ${sandbox.key} ignored: ${read.invalid}` : null;
      return { state: { phase: 'started' }, ignored };
    },

    async released(key) {
      try {
        await unlink(reportPath(sandboxesDir, key));
      } catch (error) {
        if ((error as { code?: unknown }).code === 'ENOENT') return;
        throw error;
      }
      await syncPath(guestReportsDir(sandboxesDir));
    },
  };
}

// `sandlot inspect <environmentId>`: replays an Environment's persisted journal into the Stately
// inspector, its whole history in order (one registration with the machine definition, then each
// revision's event with its source and the state it led to), waits until the relay has it all,
// and exits. The replay is its own inspector actor (`<environmentId> (journal)`), apart from the
// live one that `serve --inspect` feeds. With `--server` the journal is read through a running
// server's journal route (so it works beside an embedded serve); otherwise from the database.
import type { InspectedCommit } from './inspection.ts';
import { readEnvironmentJournal } from './journal-reader.ts';

export interface InspectOptions {
  /** The inspector relay (ws://…). */
  url: string;
  /** A running server to read the journal through (http://…); with it, the token options. */
  server?: string;
  project?: string;
  token?: string;
  tokenFile?: string;
}

type ReplayRow = Omit<InspectedCommit, 'environmentId' | 'snapshot'>;

/** The journal to replay, and the Environment's ID (the target may be an address). */
async function journalOf(target: string, options: InspectOptions): Promise<[string, ReplayRow[]]> {
  if (options.server === undefined) return [target, await readEnvironmentJournal(target)];
  const { readJournalThroughApi } = await import('./remote-journal.ts');
  const rows = await readJournalThroughApi(target, {
    url: options.server,
    ...(options.project === undefined ? {} : { project: options.project }),
    ...(options.token === undefined ? {} : { token: options.token }),
    ...(options.tokenFile === undefined ? {} : { tokenFile: options.tokenFile }),
  });
  const environmentId = target.split('/').at(-1) ?? target;
  return [
    environmentId,
    rows.map((r) => ({
      revision: r.revision,
      event: r.event,
      source: r.source,
      actor: r.actor,
      fromState: r.from,
      toState: r.to,
    })),
  ];
}

const CONNECT_TIMEOUT_MS = 5_000;

export async function inspectCommand(target: string, options: InspectOptions): Promise<void> {
  const [environmentId, entries] = await journalOf(target, options);
  const [{ InspectionFeed }, { environmentMachine }] = await Promise.all([
    import('./inspection.ts'),
    import('../machines/environment.ts'),
  ]);
  const feed = new InspectionFeed({
    url: options.url,
    machine: environmentMachine,
    // Everything is sent, nothing dropped, and the process waits for it.
    maxQueued: Number.POSITIVE_INFINITY,
    holdProcess: true,
    sessionOf: (id) => `${id} (journal)`,
  });
  try {
    if (!(await feed.whenOpen(CONNECT_TIMEOUT_MS))) {
      throw new Error(
        `no inspector relay answers at ${options.url}. Start one with \`sandlot inspector\` ` +
          '(and open the page it prints), or pass --url',
      );
    }
    for (const entry of entries) {
      feed.push({
        environmentId,
        revision: entry.revision,
        event: entry.event,
        source: entry.source,
        actor: entry.actor,
        fromState: entry.fromState,
        toState: entry.toState,
        snapshot: null,
      });
    }
  } finally {
    await feed.close(30_000);
  }
  const { sent } = feed.stats();
  if (sent !== entries.length)
    throw new Error(`sent ${sent} of ${entries.length} journal rows; the relay went away`);
  process.stdout.write(
    `replayed ${sent} journal rows of ${environmentId} (revisions 1-${entries.at(-1)?.revision ?? 0}) to ${options.url}\n`,
  );
}

// `sandlot host run` and `sandlot host cleanup`: the reference sandbox host as a process, on one
// machine, over one journal directory. Invariants: ReferenceHost.open takes the directory's lock and
// close releases it, so a daemon and an operator cleanup never share a journal (the second one is
// refused with HostJournalLockedError); a stop (SIGTERM, SIGINT, an aborted signal) lands between envelopes, never
// inside one; log lines carry ids, codes and times, never a key, a certificate or an envelope.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { ControlClient } from '../providers/sandbox-host/control-client.ts';
import { createLocalRecordEffects, type HostEffects } from '../providers/sandbox-host/host-effects.ts';
import { createReferenceGuest } from '../providers/sandbox-host/host-guest.ts';
import { ControlRetriesExhaustedError } from '../providers/sandbox-host/host-errors.ts';
import { JOURNAL_FILE, type Quarantine } from '../providers/sandbox-host/host-journal.ts';
import { type ControlPort, ReferenceHost } from '../providers/sandbox-host/reference-host.ts';
import {
  type HostDeclaration,
  HostDeclarationError,
  type HostMaterials,
  loadHostDeclaration,
  loadHostMaterials,
} from './host-declaration.ts';
import { processLogger } from './process-logger.ts';
import { UsageError } from './usage.ts';

/** One deadline per control call (connect, handshake, answer). */
export const CONTROL_TIMEOUT_MS = 10_000;
/** How often the daemon logs its health line unless told otherwise. */
export const DEFAULT_HEALTH_EVERY_MS = 60_000;

type Out = (text: string) => void;
const stdout: Out = (text) => process.stdout.write(text);

interface Opened {
  declaration: HostDeclaration;
  materials: HostMaterials;
}

async function openDeclaration(file: string): Promise<Opened> {
  const declaration = await loadHostDeclaration(file);
  return { declaration, materials: await loadHostMaterials(file, declaration) };
}

/** The sandbox records and their declared guest (absent: a guest that waits for its own report). */
function effectsOf(d: HostDeclaration): HostEffects {
  const now = () => new Date();
  const guest = createReferenceGuest(d.sandboxesDir, d.guest?.configured ?? 'on-report', now);
  return createLocalRecordEffects(d.sandboxesDir, now, guest);
}

function clientFor(file: string, { declaration: d, materials: m }: Opened): ControlClient {
  try {
    return new ControlClient({
      baseUrl: d.control.url,
      hostId: d.hostId,
      certPem: m.certPem,
      keyPem: m.keyPem,
      caPem: m.caPem,
      timeoutMs: CONTROL_TIMEOUT_MS,
      ...(d.control.address === undefined ? {} : { address: d.control.address }),
      ...(d.control.localAddress === undefined ? {} : { localAddress: d.control.localAddress }),
    });
  } catch (error) {
    // The client's refusal names the rule (https://<name>:<port>, an IP address), not a value.
    throw new HostDeclarationError(file, [`control: ${(error as Error).message}`]);
  }
}

const codeOf = (error: unknown): string => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : ((error as Error | null)?.name ?? 'error');
};

/** The client, with one log line for each call that failed (the loop decides about retrying). */
function loggedControl(client: ControlPort, hostId: string, logger: Logger): ControlPort {
  const note = (call: string, error: unknown, signal: AbortSignal) => {
    if (signal.aborted) return;
    const reason = (error as { reason?: unknown }).reason;
    logger.warn(
      { hostId, call, code: codeOf(error), ...(typeof reason === 'string' ? { reason } : {}) },
      'host poll error',
    );
  };
  return {
    async fetchAssignments(after, signal) {
      try {
        return await client.fetchAssignments(after, signal);
      } catch (error) {
        note('fetchAssignments', error, signal);
        throw error;
      }
    },
    async reportResult(wire, signal) {
      try {
        await client.reportResult(wire, signal);
      } catch (error) {
        note('reportResult', error, signal);
        throw error;
      }
    },
  };
}

const quarantineIds = (quarantines: readonly Quarantine[]) =>
  quarantines.map((q) => ({ operationId: q.operationId, environmentId: q.environmentId, since: q.since }));

function healthLine(host: ReferenceHost) {
  const health = host.health();
  const refusals = host.refusals;
  const last = refusals[refusals.length - 1];
  return {
    lastHealthyPoll: health.lastHealthyPoll,
    lastPollError: health.lastPollError,
    lastSequence: host.state.lastSequence,
    quarantines: quarantineIds(health.quarantines),
    refusals: refusals.length,
    ...(last === undefined ? {} : { lastRefusal: { sequence: last.sequence, code: last.code, at: last.at } }),
    stopped: health.stopped,
  };
}

export interface RunHostOptions {
  /** The declaration file (`--config`). */
  config: string;
  /** Aborting it stops the daemon between envelopes; runHost then resolves. */
  signal: AbortSignal;
  logger: Logger;
  healthEveryMs?: number;
  out?: Out;
}

/**
 * Runs the reference host until the signal aborts. Rejects, with the journal closed and its lock
 * released, on a bad declaration or file, a locked or corrupt journal, a refusal from the control
 * channel, or ControlRetriesExhausted.
 */
export async function runHost(options: RunHostOptions): Promise<void> {
  const { logger, signal, out = stdout } = options;
  const opened = await openDeclaration(options.config);
  const { declaration: d, materials: m } = opened;
  const client = loggedControl(clientFor(options.config, opened), d.hostId, logger);
  const host = await ReferenceHost.open({
    hostId: d.hostId,
    journalDir: d.journalDir,
    trust: m.trust,
    signer: m.signer,
    control: client,
    effects: effectsOf(d),
    now: () => new Date(),
  });
  try {
    logger.info(
      {
        hostId: d.hostId,
        control: d.control.url,
        journalDir: d.journalDir,
        guest: d.guest?.configured ?? 'on-report',
        lastSequence: host.state.lastSequence,
        tornBytesDropped: host.tornBytesDropped,
        quarantines: quarantineIds(host.quarantines),
      },
      'host started',
    );
    out(`sandlot host ${d.hostId} polling ${d.control.url} every ${d.pollIntervalMs} ms\n`);
    const timer = setInterval(
      () => logger.info({ hostId: d.hostId, ...healthLine(host) }, 'host health'),
      options.healthEveryMs ?? DEFAULT_HEALTH_EVERY_MS,
    );
    try {
      await host.run(signal, { intervalMs: d.pollIntervalMs, ...d.retry });
    } catch (error) {
      if (error instanceof ControlRetriesExhaustedError) {
        throw new Error(`${error.message}; is the control plane at ${d.control.url} reachable?`, {
          cause: error,
        });
      }
      throw error;
    } finally {
      clearInterval(timer);
    }
    logger.info({ hostId: d.hostId, ...healthLine(host) }, 'host stopped');
  } finally {
    await host.close();
  }
}

/** `sandlot host run`: the daemon, stopped by SIGTERM or SIGINT (a second one exits at once). */
export async function hostRunCommand(options: { config: string; healthEvery?: number }): Promise<void> {
  const logger = processLogger('info');
  const controller = new AbortController();
  const onSignal = (name: NodeJS.Signals) => {
    if (controller.signal.aborted) {
      logger.warn({ signal: name }, 'second signal; exiting now');
      process.exit(1);
    }
    logger.info({ signal: name }, 'stopping after the current envelope');
    controller.abort();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    await runHost({
      config: options.config,
      signal: controller.signal,
      logger,
      ...(options.healthEvery === undefined ? {} : { healthEveryMs: options.healthEvery }),
    });
    process.stdout.write('sandlot host stopped\n');
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
}

export interface CleanupOptions {
  config: string;
  operation: string;
  operator: string;
  out?: Out;
}

/** A ControlPort for a process that must not talk to the control plane (the operator's cleanup). */
const offline: ControlPort = {
  fetchAssignments: () => Promise.reject(new Error('host cleanup does not poll the control plane')),
  reportResult: () => Promise.reject(new Error('host cleanup does not report results')),
};

/**
 * Confirms an operator cleanup of one quarantined operation in the host's journal. Refused while a
 * daemon holds the journal, for a journal that does not exist, and for an operation that is not
 * quarantined (CleanupRefusedError).
 */
export async function cleanupHost(options: CleanupOptions): Promise<Quarantine> {
  const { out = stdout } = options;
  const operator = options.operator.trim();
  if (operator === '' || operator.length > 256) throw new UsageError('--operator must name who cleaned up');
  const operation = options.operation.trim();
  if (operation === '' || operation.length > 256)
    throw new UsageError('--operation must name an operation id');
  const { declaration: d, materials: m } = await openDeclaration(options.config);
  if (!existsSync(join(d.journalDir, JOURNAL_FILE))) {
    throw new Error(`no host journal in ${d.journalDir}: nothing is quarantined there`);
  }
  const host = await ReferenceHost.open({
    hostId: d.hostId,
    journalDir: d.journalDir,
    trust: m.trust,
    signer: m.signer,
    control: offline,
    effects: effectsOf(d),
    now: () => new Date(),
  });
  try {
    const cleared = await host.confirmCleanup(operation, operator);
    out(
      [
        `cleared the quarantine of operation ${cleared.operationId} on host ${d.hostId}`,
        `  environment: ${cleared.environmentId}`,
        `  sequence:    ${cleared.sequence}`,
        `  since:       ${cleared.since}`,
        `  confirmed by ${operator}; envelopes for the environment proceed again`,
        `  still quarantined: ${host.quarantines.length}`,
        '',
      ].join('\n'),
    );
    return cleared;
  } finally {
    await host.close();
  }
}

export async function hostCleanupCommand(options: CleanupOptions): Promise<void> {
  await cleanupHost(options);
}

// The Stately inspector bridge. The runtime computes transitions with the pure `transition()`, which
// no inspector sees, so committed transitions are told to the inspector here, after commit: from the
// runtime's commit listener (`serve --inspect`, `worker --inspect`) or from the journal (`sandlot
// inspect`). Messages are the inspector's own (@statelyai/inspect's createInspector builds them):
// per Environment one `@xstate.actor` registration carrying the machine definition, so the diagram
// draws, then per committed revision one `@xstate.event` (its source as the sender: http, worker,
// reconciler, observer, provider, system) and one `@xstate.snapshot` (the resulting state).
//
// Never in a commit's way: the listener only appends to a bounded queue; a later turn of the event
// loop serialises and sends. While nothing listens (or the relay does not keep up) the queue keeps
// the newest `maxQueued` commits and counts what it dropped. The socket and the reconnect timer are
// unref'd, so a process that is otherwise done exits even while the inspector is unreachable.
//
// Several processes may feed one relay: an Environment's session ID is its environmentId, so the
// API's and the workers' transitions of one Environment land on one actor. Each connection registers
// an Environment (and each source) before its first event on that connection.
import { connect as netConnect, isIP, type NetConnectOpts } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions as TlsConnectionOptions } from 'node:tls';
import type { Logger } from 'pino';
import { createInspector, type StatelyInspectionEvent } from '@statelyai/inspect';
import type { AnyStateMachine } from 'xstate';
import WebSocket from 'ws';
import { visibleEvent } from '../actors/journal.ts';
import type { CommitNotice } from '../actors/runtime.ts';

/** One committed revision of one Environment, as the inspector is told about it. */
export interface InspectedCommit {
  environmentId: string;
  revision: number;
  /** The event as journaled; only its visible fields are sent (actors/journal.ts). */
  event: unknown;
  /** null: journaled before sources were recorded. */
  source: string | null;
  actor: string;
  fromState: unknown;
  toState: unknown;
  /** The persisted snapshot of the revision, when known (live); replays know only the state. */
  snapshot: { status?: unknown; value?: unknown; context?: unknown } | null;
}

export interface InspectionFeedOptions {
  /** The inspector relay, ws:// or wss://. */
  url: string;
  machine: AnyStateMachine;
  logger?: Logger;
  /** Commits kept while they cannot be sent; older ones are dropped and counted (default 1000). */
  maxQueued?: number;
  /** Wait before reconnecting after the relay went away or never answered (default 2 s). */
  reconnectMs?: number;
  /** Keep the process alive while connected (a replay that must finish); default false. */
  holdProcess?: boolean;
  /** The inspector actor's session ID for an Environment (default: its environmentId). */
  sessionOf?: (environmentId: string) => string;
}

export interface InspectionStats {
  connected: boolean;
  /** Commits sent to a relay. */
  sent: number;
  /** Commits dropped because the queue was full (nobody listening, or a slow relay). */
  dropped: number;
  queued: number;
}

/** What ws hands its `createConnection` (the http.request options it built). */
type ConnectOptions = Record<string, unknown> & { host?: string; socketPath?: string; servername?: string };

/** Above this many bytes unsent on the socket the relay is not keeping up: stop and retry later. */
const HIGH_WATER_BYTES = 4 * 1024 * 1024;
/** Commits sent per turn of the event loop, so a backlog never starves request handling. */
const BATCH = 200;
/** Keys of an Environment's context that are not the inspector's business. */
const HIDDEN_KEYS = new Set(['providerOptions', 'claimToken']);
/** Registrations remembered per connection; beyond this, Environments simply register again. */
const MAX_REGISTERED = 10_000;

/** The context with provider options and claim tokens replaced (they never leave the process). */
function hideSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(hideSecrets);
  if (typeof value !== 'object' || value === null) return value;
  const shown: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    shown[key] = HIDDEN_KEYS.has(key) && inner !== null ? '[hidden]' : hideSecrets(inner);
  }
  return shown;
}

/** What the runtime's listener hands over: committed transitions only, references kept as they are. */
export function commitOf(notice: CommitNotice, event: unknown = notice.event): InspectedCommit | null {
  if (notice.outcome !== 'committed') return null;
  return {
    environmentId: notice.environmentId,
    revision: notice.revision,
    event,
    source: notice.source,
    actor: notice.actor,
    fromState: notice.fromState,
    toState: notice.toState,
    snapshot: notice.snapshot as InspectedCommit['snapshot'],
  };
}

export class InspectionFeed {
  readonly #options: Required<Omit<InspectionFeedOptions, 'logger'>> & { logger?: Logger };
  readonly #queue: InspectedCommit[] = [];
  #ws: WebSocket | null = null;
  #open = false;
  #closed = false;
  #flushScheduled = false;
  #retry: NodeJS.Timeout | null = null;
  #sent = 0;
  #dropped = 0;
  #droppedReported = 0;
  #unreachableLogged = false;
  /** Per connection: which sessions and sources were registered on it. */
  #registered = new Set<string>();
  #waiters = new Set<() => void>();
  readonly #inspector;

  constructor(options: InspectionFeedOptions) {
    this.#options = {
      maxQueued: 1000,
      reconnectMs: 2000,
      holdProcess: false,
      sessionOf: (environmentId) => environmentId,
      ...options,
    };
    this.#inspector = createInspector(
      {
        // Named by session (the environmentId), not by the machine's ID, which every one shares.
        send: (message: StatelyInspectionEvent) =>
          this.#ws?.send(
            JSON.stringify(
              message.type === '@xstate.actor' ? { ...message, name: message.sessionId } : message,
            ),
          ),
      },
      // The definition is small (kilobytes) but deeply nested: do not let it be cut short.
      { serializationDepthLimit: 100 },
    );
    this.#connect();
  }

  /** The runtime's commit listener: O(1), never throws, never waits. */
  readonly listener = (notice: CommitNotice): void => {
    const commit = commitOf(notice);
    if (commit !== null) this.push(commit);
  };

  push(commit: InspectedCommit): void {
    if (this.#closed) return;
    this.#queue.push(commit);
    while (this.#queue.length > this.#options.maxQueued) {
      this.#queue.shift();
      this.#dropped++;
    }
    this.#scheduleFlush();
  }

  stats(): InspectionStats {
    return { connected: this.#open, sent: this.#sent, dropped: this.#dropped, queued: this.#queue.length };
  }

  /** Resolves true once connected, false if not within `timeoutMs`. */
  async whenOpen(timeoutMs: number): Promise<boolean> {
    if (this.#open) return true;
    let timer: NodeJS.Timeout | undefined;
    let waiter: (() => void) | undefined;
    const opened = await Promise.race([
      new Promise<true>((resolve) => {
        waiter = () => resolve(true);
        this.#waiters.add(waiter);
      }),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (waiter !== undefined) this.#waiters.delete(waiter);
    return opened;
  }

  /**
   * Sends what is queued if a relay is connected (for at most `graceMs`), then closes the socket.
   * Never waits on an absent relay: with nobody listening it returns at once.
   */
  async close(graceMs = 1000): Promise<void> {
    if (this.#closed) return;
    const deadline = Date.now() + graceMs;
    while (this.#open && Date.now() < deadline && (this.#queue.length > 0 || this.#unsent() > 0)) {
      this.#flush();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    this.#closed = true;
    if (this.#retry !== null) clearTimeout(this.#retry);
    const ws = this.#ws;
    this.#ws = null;
    this.#open = false;
    if (ws === null) return;
    if (ws.readyState === WebSocket.OPEN) {
      const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
      ws.close(1000, 'sandlot is stopping');
      const timer = setTimeout(() => ws.terminate(), Math.max(50, deadline - Date.now()));
      timer.unref();
      await closed;
      clearTimeout(timer);
    } else {
      ws.terminate();
    }
  }

  #unsent(): number {
    return this.#ws?.bufferedAmount ?? 0;
  }

  #connect(): void {
    if (this.#closed) return;
    const hold = this.#options.holdProcess;
    const ws = new WebSocket(this.#options.url, {
      handshakeTimeout: 5000,
      // The socket does not keep the process alive unless asked: a process that is done exits.
      createConnection: ((options: ConnectOptions) => {
        const socket = this.#options.url.startsWith('wss:')
          ? tlsConnect({
              ...options,
              path: undefined,
              servername: options.servername ?? (isIP(options.host ?? '') === 0 ? options.host : ''),
            } as TlsConnectionOptions)
          : netConnect({ ...options, path: options.socketPath } as NetConnectOpts);
        if (!hold) socket.unref();
        return socket;
      }) as never,
    });
    this.#ws = ws;
    ws.on('open', () => {
      this.#open = true;
      this.#registered = new Set();
      const lost = this.#dropped - this.#droppedReported;
      this.#droppedReported = this.#dropped;
      this.#unreachableLogged = false;
      this.#options.logger?.info(
        { url: this.#options.url, queued: this.#queue.length, dropped: lost },
        'inspector connected',
      );
      for (const waiter of this.#waiters) waiter();
      this.#scheduleFlush();
    });
    // The relay echoes what other processes send: none of it is for us.
    ws.on('message', () => undefined);
    ws.on('error', (error) => {
      if (!this.#unreachableLogged && !this.#closed) {
        this.#unreachableLogged = true;
        this.#options.logger?.warn(
          { url: this.#options.url, reason: error.message },
          'inspector not reachable; commits are queued (the oldest dropped) until it is',
        );
      }
    });
    ws.on('close', () => {
      if (this.#ws !== ws) return;
      this.#open = false;
      this.#ws = null;
      if (this.#closed) return;
      this.#retry = setTimeout(() => {
        this.#retry = null;
        this.#connect();
      }, this.#options.reconnectMs);
      this.#retry.unref();
    });
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled || !this.#open) return;
    this.#flushScheduled = true;
    setImmediate(() => {
      this.#flushScheduled = false;
      this.#flush();
    });
  }

  #flush(): void {
    let sent = 0;
    while (this.#open && this.#queue.length > 0 && sent < BATCH) {
      if (this.#unsent() > HIGH_WATER_BYTES) {
        // The relay is slow: try again shortly; meanwhile the queue bounds what is kept.
        setTimeout(() => this.#scheduleFlush(), 50).unref();
        return;
      }
      const commit = this.#queue.shift() as InspectedCommit;
      this.#send(commit);
      sent++;
      this.#sent++;
    }
    if (this.#open && this.#queue.length > 0) this.#scheduleFlush();
  }

  #send(commit: InspectedCommit): void {
    const sessionId = this.#options.sessionOf(commit.environmentId);
    const source = commit.source ?? 'unknown';
    if (this.#registered.size > MAX_REGISTERED) this.#registered = new Set();
    if (!this.#registered.has(`source:${source}`)) {
      this.#registered.add(`source:${source}`);
      this.#inspector.actor(source, { status: 'active' });
    }
    // The inspector reads the definition from `logic.config`; a bare string ID would draw nothing.
    const ref = { sessionId, id: commit.environmentId, logic: this.#options.machine } as never;
    if (!this.#registered.has(sessionId)) {
      this.#registered.add(sessionId);
      this.#inspector.actor(ref, { status: 'active', value: commit.fromState ?? commit.toState });
    }
    const event = {
      type: String(commit.event === null ? 'unknown' : (commit.event as { type?: unknown }).type),
      ...visibleEvent(commit.event),
      sandlot: { revision: commit.revision, source: commit.source, actor: commit.actor },
    };
    this.#inspector.event(ref, event, { source });
    const snapshot = commit.snapshot ?? { status: 'active', value: commit.toState };
    this.#inspector.snapshot(
      ref,
      {
        status: (snapshot.status as 'active' | undefined) ?? 'active',
        value: snapshot.value ?? commit.toState,
        ...(snapshot.context === undefined ? {} : { context: hideSecrets(snapshot.context) }),
      },
      { event },
    );
  }
}

// Open watch streams: one JSON event per line on a chunked 200 answer, fed from the store's change
// feed. A stream starts with current state (no resourceVersion) or a replay of the kept history
// after the version asked for (or the 410 Expired ERROR event and the end), then follows live
// changes until timeoutSeconds (or the server default), the client going away, or the server
// closing. Invariant: a stream's subscription, timers and registry entry go together, in `stop`.
import type { ServerResponse } from 'node:http';
import type { ObjectStore } from './store.ts';
import { bookmark, eventFor, expired, type WatchEvent, type WatchRequest } from './watch-events.ts';

export interface WatchSettings {
  /** How long a watch that gives no `timeoutSeconds` stays open (default 300 s). */
  defaultTimeoutMs?: number;
  /** How often a watch with `allowWatchBookmarks=true` gets a BOOKMARK (default 5 s). */
  bookmarkIntervalMs?: number;
}

/** The open watch streams, for tests that need the server side of a watch to misbehave. */
export interface FakeWatches {
  /** How many watch streams are open now. */
  open(): number;
  /** Ends every open stream cleanly now, as a server does at timeoutSeconds; returns how many. */
  endAll(): number;
  /** Destroys the connection under every open stream, mid-stream and unannounced; returns how many. */
  cutAll(): number;
}

interface OpenStream {
  end(): void;
  cut(): void;
  ended: Promise<void>;
}

const byNamespacedName = (a: { metadata: { namespace?: string; name: string } }, b: typeof a): number =>
  `${a.metadata.namespace ?? ''}/${a.metadata.name}`.localeCompare(
    `${b.metadata.namespace ?? ''}/${b.metadata.name}`,
  );

export class WatchStreams implements FakeWatches {
  private readonly streams = new Set<OpenStream>();
  private readonly defaultTimeoutMs: number;
  private readonly bookmarkIntervalMs: number;
  private closed = false;

  constructor(
    private readonly store: ObjectStore,
    settings: WatchSettings = {},
  ) {
    this.defaultTimeoutMs = settings.defaultTimeoutMs ?? 300_000;
    this.bookmarkIntervalMs = settings.bookmarkIntervalMs ?? 5_000;
  }

  /** Answers `res` with the stream `watch` asks for; the request was checked already. */
  serve(watch: WatchRequest, res: ServerResponse): void {
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders(); // clients wait for the headers before they read any event
    const send = (event: WatchEvent | undefined): void => {
      if (event && !res.writableEnded && !res.destroyed) res.write(`${JSON.stringify(event)}\n`);
    };
    if (this.closed) {
      res.end();
      return;
    }
    if (watch.after === undefined) {
      const current = this.store.all(watch.resource, watch.namespace, watch.matches).sort(byNamespacedName);
      for (const object of current) send({ type: 'ADDED', object });
    } else {
      const replay = this.store.changes.since(watch.after);
      if (!replay) {
        send(expired(watch.after, this.store.changes.oldestWatchable));
        res.end();
        return;
      }
      for (const change of replay) send(eventFor(watch, change));
    }
    // Same turn as the snapshot or replay above: no change can fall between the two.
    const unsubscribe = this.store.changes.subscribe((change) => send(eventFor(watch, change)));
    const timeout = setTimeout(() => res.end(), watch.timeoutMs ?? this.defaultTimeoutMs);
    const bookmarks = watch.bookmarks
      ? setInterval(() => send(bookmark(watch.resource, this.store.revision)), this.bookmarkIntervalMs)
      : undefined;
    let ended!: () => void;
    const stream: OpenStream = {
      end: () => res.end(),
      cut: () => res.destroy(),
      ended: new Promise((resolve) => (ended = resolve)),
    };
    const stop = (): void => {
      if (!this.streams.delete(stream)) return;
      unsubscribe();
      clearTimeout(timeout);
      clearInterval(bookmarks);
      ended();
    };
    this.streams.add(stream);
    res.once('finish', stop); // ended by the server, the last chunk handed to the socket
    res.once('close', stop); // or the connection went away first
  }

  open(): number {
    return this.streams.size;
  }

  endAll(): number {
    const open = [...this.streams];
    for (const stream of open) stream.end();
    return open.length;
  }

  cutAll(): number {
    const open = [...this.streams];
    for (const stream of open) stream.cut();
    return open.length;
  }

  /** Ends every stream and refuses new ones; resolves once each end is written. */
  async close(): Promise<void> {
    this.closed = true;
    const open = [...this.streams];
    for (const stream of open) stream.end();
    await Promise.all(open.map((s) => s.ended));
  }
}

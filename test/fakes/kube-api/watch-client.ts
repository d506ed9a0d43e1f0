// A bare watch client for the fake's own tests: one HTTPS request with the fake's CA and token, the
// stream split into events as they arrive. Tests await events and the end of the stream; nothing
// here sleeps.
import type { IncomingHttpHeaders } from 'node:http';
import { request } from 'node:https';
import type { FakeKubeApi } from './index.ts';
import type { WatchEvent } from './watch-events.ts';

/** `end`: the server finished the answer; `cut`: the connection went before it did. */
export type WatchEnd = 'end' | 'cut';

export interface WatchClient {
  status: number;
  headers: IncomingHttpHeaders;
  /** The parsed body of an answer other than 200 (a `Status`). */
  body: unknown;
  /** The next event; rejects if the stream ends first. */
  next(): Promise<WatchEvent>;
  take(count: number): Promise<WatchEvent[]>;
  /** The next event of `type`, skipping others. */
  nextOf(type: WatchEvent['type']): Promise<WatchEvent>;
  ended: Promise<WatchEnd>;
  /** Closes the connection from the client's side. */
  disconnect(): void;
}

/** Watches a list path (`watch=true` is added); resolves once the answer's headers are in. */
export function openWatch(
  fake: FakeKubeApi,
  path: string,
  query: Record<string, string> = {},
): Promise<WatchClient> {
  const url = new URL(path, fake.url);
  url.searchParams.set('watch', 'true');
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
  return new Promise((resolve, reject) => {
    const req = request(url, {
      ca: fake.caPem,
      agent: false,
      headers: { authorization: `Bearer ${fake.token}` },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const events: WatchEvent[] = [];
      let wake: (() => void) | undefined;
      let finished: WatchEnd | undefined;
      let pending = '';
      let endedWith!: (end: WatchEnd) => void;
      const ended = new Promise<WatchEnd>((done) => (endedWith = done));
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        pending += chunk;
        for (let at = pending.indexOf('\n'); at >= 0; at = pending.indexOf('\n')) {
          const line = pending.slice(0, at).trim();
          pending = pending.slice(at + 1);
          if (line !== '') events.push(JSON.parse(line) as WatchEvent);
        }
        wake?.();
      });
      res.on('error', () => undefined); // a cut connection; `close` below reports it
      res.on('close', () => {
        finished = res.complete ? 'end' : 'cut';
        endedWith(finished);
        wake?.();
      });
      const next = async (): Promise<WatchEvent> => {
        for (;;) {
          const event = events.shift();
          if (event) return event;
          if (finished) throw new Error(`the watch ended (${finished}) before another event`);
          await new Promise<void>((woken) => (wake = woken));
        }
      };
      const client: WatchClient = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        body: undefined,
        next,
        take: async (count) => {
          const taken: WatchEvent[] = [];
          while (taken.length < count) taken.push(await next());
          return taken;
        },
        nextOf: async (type) => {
          for (;;) {
            const event = await next();
            if (event.type === type) return event;
          }
        },
        ended,
        disconnect: () => req.destroy(),
      };
      if (client.status === 200) return resolve(client);
      void ended.then(() => {
        try {
          client.body = JSON.parse(pending) as unknown;
          resolve(client);
        } catch (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      });
    });
    req.end();
  });
}

// The load driver's HTTP client: requests go round-robin over the API processes. A connection error
// from an API the harness killed (or one that crashed, itself a finding) retries the same request,
// idempotency key and all, on the next API; a 503 while the harness restarts PostgreSQL (or within
// 10 s after) is retried too. Both are counted apart. Any other 5xx, a connection error from an API
// that was up, or a request that never answers is a finding: recorded first, then retried a few
// times so that the run goes on. Each lifecycle keeps a trace of its requests for the report.
import { ConnectionError, RequestTimeoutError, sendJson } from './http.ts';
import type { Recorder } from './recorder.ts';

export interface ApiEndpoint {
  name: string;
  url: string;
}

export interface Disruptions {
  /** Whether the API was down at `at`, or killed, crashed or back within a few seconds of it. */
  apiDisrupted(name: string, at: number): 'killed' | 'crashed' | null;
  /** `at` falls in a PostgreSQL restart (or just after it). */
  inPgRestart(at: number): boolean;
}

export interface Answer {
  status: number;
  body: Record<string, unknown>;
  api: string;
  /** When the client had the whole answer (epoch milliseconds). */
  receivedAtMs: number;
}

export interface CallOptions {
  /** Send to this API (an index) first, instead of the next one in turn. */
  pin?: number;
  /** Where one line per request and answer goes. */
  trace?: string[];
}

const REQUEST_TIMEOUT_MS = 30_000;
const GIVE_UP_AFTER_MS = 180_000;
const UNEXPLAINED_RETRIES = 3;
const PROBLEM = 'urn:sandlot:problem:';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class ChaosClient {
  #turn = 0;

  constructor(
    private readonly apis: readonly ApiEndpoint[],
    private readonly token: () => string,
    private readonly disruptions: Disruptions,
    private readonly recorder: Recorder,
  ) {}

  async call(method: string, path: string, body?: unknown, options: CallOptions = {}): Promise<Answer> {
    const { trace } = options;
    const started = Date.now();
    let index = options.pin ?? this.#turn++;
    let unexplained = 0;
    const line = (at: number, api: string, what: string) =>
      trace?.push(
        `+${(this.recorder.elapsed(at) / 1000).toFixed(1)}s ${method} ${shortPath(path)} ${api}: ${what}`,
      );
    for (;;) {
      const api = this.apis[index % this.apis.length] as ApiEndpoint;
      const sentAt = Date.now();
      this.recorder.count('requests');
      try {
        const raw = await sendJson(
          `${api.url}${path}`,
          method,
          { authorization: `Bearer ${this.token()}`, accept: 'application/json' },
          body,
          REQUEST_TIMEOUT_MS,
        );
        const receivedAtMs = Date.now();
        const parsed = parseBody(raw.text);
        const type = typeof parsed['type'] === 'string' ? parsed['type'].replace(PROBLEM, '') : '';
        line(sentAt, api.name, `${raw.status}${type === '' ? '' : ` ${type}`}`);
        const answer: Answer = { status: raw.status, body: parsed, api: api.name, receivedAtMs };
        if (raw.status < 500) return answer;
        if (
          raw.status === 503 &&
          (this.disruptions.inPgRestart(sentAt) || this.disruptions.inPgRestart(Date.now()))
        ) {
          this.recorder.count(`retried: 503 ${type || '(no type)'} during the PostgreSQL restart`);
        } else {
          this.recorder.find(
            'unexpected-5xx',
            `${method} ${path} on ${api.name}: ${raw.status} ${raw.text.slice(0, 300)}`,
            environmentOf(path),
          );
          if (++unexplained > UNEXPLAINED_RETRIES) return answer;
        }
        await sleep(500);
      } catch (error) {
        if (error instanceof RequestTimeoutError) {
          line(sentAt, api.name, error.message);
          this.recorder.find(
            'request-timeout',
            `${method} ${path} on ${api.name}: ${error.message}`,
            environmentOf(path),
          );
          if (++unexplained > UNEXPLAINED_RETRIES) throw error;
        } else if (error instanceof ConnectionError) {
          // A request in flight when its API was killed fails then, however long ago it was sent;
          // a process that crashed is noticed a moment after its connections broke.
          const failedAt = Date.now();
          const disrupted = () =>
            this.disruptions.apiDisrupted(api.name, sentAt) ??
            this.disruptions.apiDisrupted(api.name, failedAt);
          const why = disrupted() ?? (await sleep(1_000).then(disrupted));
          line(sentAt, api.name, `${error.message}${why === null ? '' : ` (${why})`}`);
          if (why !== null) {
            this.recorder.count(`retried: connection error from a ${why} API`);
          } else {
            this.recorder.find(
              'connection-error-from-live-api',
              `${method} ${path} on ${api.name}: ${error.message}`,
              environmentOf(path),
            );
            if (++unexplained > UNEXPLAINED_RETRIES) throw error;
          }
        } else {
          throw error;
        }
        index += 1;
        await sleep(150);
      }
      if (Date.now() - started > GIVE_UP_AFTER_MS) {
        throw new Error(`${method} ${path}: no usable answer in ${GIVE_UP_AFTER_MS / 1000} s`);
      }
    }
  }
}

/** The Environment a path names, if any. */
const environmentOf = (path: string) => /\/environments\/(env_[a-z0-9]+)/.exec(path)?.[1];

/** The path from the Environment on (`…/env_x/sandbox/provision`), for traces. */
const shortPath = (path: string) => path.replace(/^\/api\/projects\/[^/]+\/runs\/[^/]+\/environments/, '…');

function parseBody(text: string): Record<string, unknown> {
  if (text === '') return {};
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : { value };
  } catch {
    return { raw: text.slice(0, 500) };
  }
}

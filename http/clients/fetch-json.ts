// A bounded JSON GET for the external services we depend on (Projects, run selection), over a pool
// of kept-alive connections: one node:http(s) Agent per client, one timer per request as its whole
// deadline (connect, send, answer and body), and a cap on the answer's size. With `caPem` the https
// Agent trusts only those roots (the service-backend-ca), never the system store. A failure is an error,
// never an empty answer: an authority we cannot reach must deny, not allow.
import http from 'node:http';
import https from 'node:https';
import { problemClass } from '../../lib/errors.ts';
import { tlsRefusalCode } from './tls-refusal.ts';

/** `reason` is a fixed phrase, an HTTP status or an error name, never response content: caller-safe. */
export class UpstreamError extends problemClass({
  code: 'upstream-unavailable',
  status: 503,
  title: 'Upstream unavailable',
  callerSafe: true,
}) {
  constructor(
    readonly service: string,
    reason: string,
  ) {
    super(`${service} is unavailable: ${reason}`);
  }
}

export type JsonAnswer = { status: 404 } | { status: 200; body: unknown };

export interface JsonClientOptions {
  /** The whole request's deadline, from the call to the last byte of the answer. */
  timeoutMs: number;
  /** Connections kept per origin (default 32); requests beyond wait for a free one, within their deadline. */
  maxSockets?: number;
  /** The largest answer accepted (default 1 MiB); a longer one is an upstream failure. */
  maxBytes?: number;
  /** PEM roots the server's certificate must chain to, instead of the system trust store. */
  caPem?: string;
}

const DEFAULT_MAX_SOCKETS = 32;
const DEFAULT_MAX_BYTES = 1024 * 1024;

/** The Node error codes a failed connection reports: fixed words, safe to show a caller. */
const ERROR_CODE = /^E[A-Z_]{2,40}$/;

export class JsonClient {
  readonly #http: http.Agent;
  readonly #https: https.Agent;
  readonly #timeoutMs: number;
  readonly #maxBytes: number;

  constructor(
    private readonly service: string,
    options: JsonClientOptions,
  ) {
    const pool = {
      keepAlive: true,
      maxSockets: options.maxSockets ?? DEFAULT_MAX_SOCKETS,
      scheduling: 'lifo',
    };
    this.#http = new http.Agent(pool as http.AgentOptions);
    this.#https = new https.Agent({
      ...(pool as https.AgentOptions),
      ...(options.caPem === undefined ? {} : { ca: options.caPem }),
    });
    this.#timeoutMs = options.timeoutMs;
    this.#maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  }

  /** 200 with its parsed body, or 404; anything else is an UpstreamError. */
  async get(url: URL): Promise<JsonAnswer> {
    try {
      return await this.#once(url, true);
    } catch (error) {
      // A kept-alive connection the server closed as we reused it: the GET never reached it, so
      // one retry is safe (and within the same caller-visible contract). The retry may draw
      // another stale connection from the pool: that one is an upstream failure like any other.
      if (error instanceof StaleSocketError) return this.#once(url, false);
      throw error;
    }
  }

  /** Closes the pooled connections (idle ones at once, busy ones when their request ends). */
  close(): void {
    this.#http.destroy();
    this.#https.destroy();
  }

  /** One request; `mayRetry` lets a reset reused connection reject as a StaleSocketError. */
  #once(url: URL, mayRetry: boolean): Promise<JsonAnswer> {
    const { service } = this;
    const secure = url.protocol === 'https:';
    if (!secure && url.protocol !== 'http:') {
      return Promise.reject(new UpstreamError(service, 'unsupported URL scheme'));
    }
    return new Promise<JsonAnswer>((resolve, reject) => {
      let settled = false;
      const finish = (error: Error | null, answer?: JsonAnswer) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        if (error === null) resolve(answer as JsonAnswer);
        else reject(error);
      };
      const request = (secure ? https : http).request(
        url,
        {
          method: 'GET',
          agent: secure ? this.#https : this.#http,
          headers: { accept: 'application/json' },
        },
        (response) => {
          const status = response.statusCode ?? 0;
          if (status !== 200) {
            // Drained, so that the connection goes back to the pool.
            response.resume();
            if (status === 404) finish(null, { status: 404 });
            else finish(new UpstreamError(service, `HTTP ${status}`));
            return;
          }
          const chunks: Buffer[] = [];
          let length = 0;
          response.on('data', (chunk: Buffer) => {
            length += chunk.length;
            if (length > this.#maxBytes) {
              finish(new UpstreamError(service, 'response too large'));
              request.destroy();
              return;
            }
            chunks.push(chunk);
          });
          response.on('error', () => finish(new UpstreamError(service, 'response interrupted')));
          // After `end` this is a no-op; before it, the connection went away mid-answer.
          response.on('close', () => finish(new UpstreamError(service, 'response interrupted')));
          response.on('end', () => {
            let body: unknown;
            try {
              body = JSON.parse(Buffer.concat(chunks, length).toString('utf8'));
            } catch {
              finish(new UpstreamError(service, 'response is not JSON'));
              return;
            }
            finish(null, { status: 200, body });
          });
        },
      );
      const deadline = setTimeout(() => {
        finish(new UpstreamError(service, 'TimeoutError'));
        // A timed-out connection is never reused: its late answer would belong to this request.
        request.destroy();
      }, this.#timeoutMs);
      request.on('error', (error: NodeJS.ErrnoException) => {
        if (mayRetry && request.reusedSocket && error.code === 'ECONNRESET' && !settled) {
          settled = true;
          clearTimeout(deadline);
          reject(new StaleSocketError());
          return;
        }
        const refused = tlsRefusalCode(error);
        if (refused !== undefined) {
          finish(new UpstreamError(service, `TLS refused (${refused})`));
          return;
        }
        const code = typeof error.code === 'string' && ERROR_CODE.test(error.code) ? error.code : null;
        finish(new UpstreamError(service, code ?? 'request failed'));
      });
      request.end();
    });
  }
}

class StaleSocketError extends Error {}

// What a host daemon uses to reach the control plane's private listener. Every call opens its own
// TLS 1.3 connection (`agent: false`), presents the host's client certificate, and trusts only the
// given CA for the server, checked for the DNS name in `baseUrl` even when the socket goes to a
// fixed address. Redirects are refused, not followed; no proxy is consulted; one deadline covers
// connect, handshake, headers and body; the answer is read up to a bound. Failures come back as
// ControlUnavailableError (transient: retry within a bound) or ControlRefusedError (a decision:
// retrying the same call cannot help), with messages that carry a status, a slug or a Node error
// code, never the certificate, the key or what the server sent.
import type { IncomingMessage } from 'node:http';
import { request } from 'node:https';
import { isIP } from 'node:net';
import { checkServerIdentity } from 'node:tls';
import type { z } from 'zod';
import { ControlRefusedError, ControlUnavailableError } from './control-errors.ts';
import {
  assignmentsAnswerSchema,
  assignmentsPath,
  MAX_CONTROL_RESPONSE_BYTES,
  PROBLEM_TYPE_PREFIX,
  problemAnswerSchema,
  resultAnswerSchema,
  resultsPath,
} from './control-wire.ts';
import type { HostResultWire } from './host-result.ts';

export interface ControlClientOptions {
  /** `https://<dns name>:<port>`: the name the listener's certificate must carry. */
  baseUrl: string;
  hostId: string;
  /** The host's clientAuth certificate and key for this generation. */
  certPem: string;
  keyPem: string;
  /** The only roots trusted for the listener's certificate. */
  caPem: string;
  /** One deadline per call. */
  timeoutMs: number;
  /** Connect here instead of resolving the name in `baseUrl` (an IP); TLS still checks the name. */
  address?: string;
  /** The local address to connect from (a host bound to its own IP), when not the default. */
  localAddress?: string;
  maxResponseBytes?: number;
}

/** Node's codes for a certificate either side refused, or a handshake that failed. */
const TLS_ERROR = /CERT|SIGNATURE|SELF_SIGNED|UNABLE_TO_|ALTNAME|ERR_SSL_|ERR_TLS_|HOSTNAME|ALERT/;

const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

interface Call {
  method: 'GET' | 'POST';
  path: string;
  body?: Buffer;
  signal: AbortSignal;
}

export class ControlClient {
  readonly #options: ControlClientOptions;
  readonly #url: URL;

  constructor(options: ControlClientOptions) {
    const url = URL.canParse(options.baseUrl) ? new URL(options.baseUrl) : undefined;
    if (
      url?.protocol !== 'https:' ||
      url.username !== '' ||
      url.password !== '' ||
      url.search !== '' ||
      url.hash !== '' ||
      url.pathname !== '/'
    ) {
      throw new ControlRefusedError('bad-request', 'baseUrl must be https://<name>:<port> and nothing more');
    }
    if (isIP(url.hostname.replace(/^\[|\]$/g, '')) !== 0) {
      throw new ControlRefusedError(
        'bad-request',
        'baseUrl must name the listener by DNS name, not by address',
      );
    }
    if (options.address !== undefined && isIP(options.address) === 0) {
      throw new ControlRefusedError('bad-request', 'address must be an IP address');
    }
    if (options.localAddress !== undefined && isIP(options.localAddress) === 0) {
      throw new ControlRefusedError('bad-request', 'localAddress must be an IP address');
    }
    if (!Number.isInteger(options.timeoutMs) || options.timeoutMs <= 0) {
      throw new ControlRefusedError('bad-request', 'timeoutMs must be a positive integer');
    }
    this.#options = options;
    this.#url = url;
  }

  /**
   * Envelopes addressed to this host after sequence `after`, each still to be verified. The shape
   * is the reference host's `ControlPort`, so this client plugs into the daemon as it is.
   */
  async fetchAssignments(after: number, signal: AbortSignal): Promise<unknown[]> {
    if (!Number.isSafeInteger(after) || after < 0) {
      throw new ControlRefusedError('bad-request', 'after must be a non-negative integer');
    }
    const path = assignmentsPath(this.#options.hostId, after);
    return (await this.#call({ method: 'GET', path, signal }, assignmentsAnswerSchema)).envelopes;
  }

  /** Hands a host-signed result to the control plane; resolves only on `{ "accepted": true }`. */
  async reportResult(wire: HostResultWire, signal: AbortSignal): Promise<void> {
    const body = Buffer.from(JSON.stringify(wire));
    await this.#call(
      { method: 'POST', path: resultsPath(this.#options.hostId), body, signal },
      resultAnswerSchema,
    );
  }

  async #call<S extends z.ZodType>(call: Call, schema: S): Promise<z.infer<S>> {
    const { status, headers, body } = await this.#exchange(call);
    const type = String(headers['content-type'] ?? '')
      .split(';')[0]
      ?.trim()
      .toLowerCase();
    if (status >= 200 && status < 300) {
      if (type !== 'application/json')
        throw new ControlRefusedError('bad-response', `HTTP ${status} not JSON`);
      const parsed = schema.safeParse(parseJson(body));
      if (!parsed.success) throw new ControlRefusedError('bad-response', `HTTP ${status} not the contract`);
      return parsed.data;
    }
    const slug = problemSlug(type, body) ?? `http-${status}`;
    if (status === 429 || status >= 500) {
      throw new ControlUnavailableError(`HTTP ${status} (${slug})`);
    }
    throw new ControlRefusedError('problem', `HTTP ${status} (${slug})`, { status, type: slug });
  }

  #exchange(call: Call): Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }> {
    if (call.signal.aborted) return Promise.reject(new ControlUnavailableError('the call was aborted'));
    const options = this.#options;
    const serverName = this.#url.hostname;
    const maxBytes = options.maxResponseBytes ?? MAX_CONTROL_RESPONSE_BYTES;
    return new Promise((resolve, reject) => {
      let settled = false;
      const req = request({
        host: options.address ?? serverName,
        ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }),
        port: this.#url.port === '' ? 443 : Number(this.#url.port),
        path: call.path,
        method: call.method,
        servername: serverName,
        cert: options.certPem,
        key: options.keyPem,
        ca: options.caPem,
        rejectUnauthorized: true,
        minVersion: 'TLSv1.3',
        checkServerIdentity: (_host, cert) => checkServerIdentity(serverName, cert),
        agent: false,
        headers: {
          host: this.#url.host,
          accept: 'application/json',
          connection: 'close',
          ...(call.body === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': String(call.body.byteLength) }),
        },
      });
      const settle = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        call.signal.removeEventListener('abort', onAbort);
        outcome();
      };
      const fail = (error: Error) => {
        settle(() => reject(error));
        req.destroy();
      };
      const onAbort = () => fail(new ControlUnavailableError('the call was aborted'));
      const timer = setTimeout(
        () => fail(new ControlUnavailableError(`no full answer within ${options.timeoutMs} ms`)),
        options.timeoutMs,
      );
      call.signal.addEventListener('abort', onAbort, { once: true });

      req.on('error', (error) => fail(transportError(error)));
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        if (status >= 300 && status < 400) {
          fail(new ControlRefusedError('redirect-refused', `redirect refused (HTTP ${status})`));
          return;
        }
        const tooLarge = () =>
          fail(new ControlRefusedError('body-too-large', `the answer exceeds ${maxBytes} bytes`));
        if (Number(res.headers['content-length'] ?? 0) > maxBytes) {
          tooLarge();
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) tooLarge();
          else chunks.push(chunk);
        });
        res.on('error', (error) => fail(transportError(error)));
        res.on('aborted', () => fail(new ControlUnavailableError('the answer broke off')));
        res.on('end', () => {
          settle(() => resolve({ status, headers: res.headers, body: Buffer.concat(chunks) }));
        });
      });
      req.end(call.body);
    });
  }
}

/** A certificate or handshake failure is a refusal; anything else on the way is unavailability. */
function transportError(error: Error): Error {
  const code = (error as NodeJS.ErrnoException).code ?? error.name;
  if (TLS_ERROR.test(code))
    return new ControlRefusedError('tls-refused', `TLS refused: ${code}`, undefined, { cause: error });
  return new ControlUnavailableError(`no answer: ${code}`, { cause: error });
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
  } catch {
    return undefined;
  }
}

/** The slug of a problem answer, when the answer is one; never any other member. */
function problemSlug(type: string | undefined, body: Buffer): string | undefined {
  if (type !== 'application/problem+json') return undefined;
  const parsed = problemAnswerSchema.safeParse(parseJson(body));
  if (!parsed.success) return undefined;
  const slug = parsed.data.type.slice(PROBLEM_TYPE_PREFIX.length);
  return SLUG.test(slug) ? slug : undefined;
}

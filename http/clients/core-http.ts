// One bounded call to Core: a fresh connection per call (`agent: false`, `connection: close`), the
// original actor's bearer, `cache-control: no-store`, and one deadline from the call to the last
// byte of the body. A redirect is refused, never followed. A 200 must be `no-store` and of the
// expected media type before a byte of its body is read; the body is capped while it streams, and
// an exact length (a seed) is enforced both on the declared Content-Length and on the bytes that
// arrive, so one byte short and one byte long are told apart. Any other status is returned without
// its body for the adapter to judge. With `caPem` the server's certificate must chain to those roots
// (the service-backend-ca), never to the system trust store.
import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import https from 'node:https';
import {
  CoreAnswerRefusedError,
  CoreDeniedError,
  CoreUnavailableError,
  type CoreAnswerProblem,
} from '../../actors/build-test/core-errors.ts';
import { tlsRefusalCode } from './tls-refusal.ts';

export interface CoreCall {
  url: URL;
  method: 'GET' | 'POST';
  bearer: string;
  /** The only media type a 200 may have. */
  accept: 'application/json' | 'application/octet-stream';
  /** A JSON request body (POST). */
  body?: Buffer;
  /** The largest 200 body read. */
  maxBytes: number;
  /** A 200 body must be exactly this long (it is also the cap). */
  exactLength?: number;
  /** One deadline for connect, headers and the whole body. */
  timeoutMs: number;
  signal: AbortSignal;
  /** PEM roots an https server's certificate must chain to, instead of the system trust store. */
  caPem?: string;
}

export interface CoreAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body of a 200; empty for any other status. */
  body: Buffer;
}

const refused = (reason: CoreAnswerProblem, message: string) => new CoreAnswerRefusedError(reason, message);

export function isNoStore(cacheControl: string | undefined): boolean {
  return (cacheControl ?? '').split(',').some((d) => d.trim().toLowerCase() === 'no-store');
}

export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

export function callCore(call: CoreCall): Promise<CoreAnswer> {
  if (call.signal.aborted) return Promise.reject(new CoreUnavailableError('aborted', 'the call was aborted'));
  const secure = call.url.protocol === 'https:';
  return new Promise<CoreAnswer>((resolve, reject) => {
    let settled = false;
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
    const onAbort = () => fail(new CoreUnavailableError('aborted', 'the call was aborted'));
    const timer = setTimeout(
      () => fail(new CoreUnavailableError('deadline-exceeded', `no full answer within ${call.timeoutMs} ms`)),
      call.timeoutMs,
    );
    call.signal.addEventListener('abort', onAbort, { once: true });

    const headers: http.OutgoingHttpHeaders = {
      accept: call.accept,
      authorization: `Bearer ${call.bearer}`,
      'cache-control': 'no-store',
      connection: 'close',
    };
    if (call.body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = call.body.length;
    }
    const pin = secure && call.caPem !== undefined ? { ca: call.caPem } : {};
    const req = (secure ? https : http).request(call.url, {
      method: call.method,
      agent: false,
      headers,
      ...pin,
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      const refused = tlsRefusalCode(error);
      if (refused !== undefined) {
        fail(new CoreUnavailableError('unreachable', `TLS refused (${refused})`, { cause: error }));
        return;
      }
      const code =
        typeof error.code === 'string' && /^E[A-Z_]{2,40}$/.test(error.code) ? error.code : 'error';
      fail(new CoreUnavailableError('unreachable', `no answer (${code})`, { cause: error }));
    });
    req.on('response', (res) => {
      const verdict = judgeHead(res, call);
      if (verdict instanceof Error) return fail(verdict);
      if (verdict === 'no-body') {
        res.resume();
        return settle(() =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.alloc(0) }),
        );
      }
      readBody(res, call, fail, (body) => settle(() => resolve({ status: 200, headers: res.headers, body })));
    });
    req.end(call.body);
  });
}

/** What the status and headers alone decide. */
function judgeHead(res: IncomingMessage, call: CoreCall): Error | 'no-body' | 'read' {
  const status = res.statusCode ?? 0;
  if (status >= 300 && status < 400) return refused('redirect-refused', `redirect refused (HTTP ${status})`);
  if (status !== 200) return 'no-body';
  if (!isNoStore(res.headers['cache-control']))
    return refused('not-no-store', 'the answer is not marked no-store');
  if (mediaType(res.headers['content-type']) !== call.accept) {
    return refused('wrong-content-type', `the answer is not ${call.accept}`);
  }
  const declared = res.headers['content-length'];
  if (declared !== undefined) {
    const length = Number(declared);
    if (call.exactLength !== undefined && length !== call.exactLength) {
      return length < call.exactLength
        ? refused('seed-short', 'the declared length is shorter than accepted')
        : refused('seed-long', 'the declared length is longer than accepted');
    }
    if (length > call.maxBytes) return refused('body-too-large', `the body exceeds ${call.maxBytes} bytes`);
  }
  return 'read';
}

function readBody(
  res: IncomingMessage,
  call: CoreCall,
  fail: (error: Error) => void,
  done: (body: Buffer) => void,
): void {
  const cap = call.exactLength ?? call.maxBytes;
  const chunks: Buffer[] = [];
  let size = 0;
  let ended = false;
  res.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size <= cap) {
      chunks.push(chunk);
      return;
    }
    fail(
      call.exactLength === undefined
        ? refused('body-too-large', `the body exceeds ${call.maxBytes} bytes`)
        : refused('seed-long', 'more bytes arrived than accepted'),
    );
  });
  res.on('end', () => {
    ended = true;
    if (size > cap) return;
    if (call.exactLength !== undefined && size < call.exactLength) {
      fail(refused('seed-short', 'fewer bytes arrived than accepted'));
      return;
    }
    done(Buffer.concat(chunks, size));
  });
  const brokeOff = () => {
    if (!ended) fail(new CoreUnavailableError('unreachable', 'the answer broke off'));
  };
  res.on('aborted', brokeOff);
  res.on('error', brokeOff);
  res.on('close', brokeOff);
}

/** One call, its status mapped: 200 and 404 are answers; 401/403 denied, 5xx unavailable, else refused. */
export async function askCore(call: CoreCall): Promise<CoreAnswer> {
  const answer = await callCore(call);
  const { status } = answer;
  if (status === 200 || status === 404) return answer;
  if (status === 401 || status === 403) throw new CoreDeniedError('denied');
  if (status >= 500 && status <= 599) throw new CoreUnavailableError('server-error', `HTTP ${status}`);
  throw new CoreAnswerRefusedError('unexpected-status', `HTTP ${status}`);
}

/** The answer's body as JSON, or undefined when it is not UTF-8 JSON (the caller's schema refuses it). */
export function jsonOf(answer: CoreAnswer): unknown {
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(answer.body)) as unknown;
  } catch {
    return undefined;
  }
}

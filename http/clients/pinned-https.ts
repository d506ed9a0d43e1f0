// One HTTPS GET (or POST of a small JSON body) to one exact Pod: the socket goes to the observed Pod IP while TLS is verified for the
// Service DNS name (never the IP) against one pinned CA, so only the Host that holds a certificate
// for that name, issued by that CA, can answer. Each call opens its own connection (`agent: false`,
// `connection: close`): a connection kept from an old Pod can never answer for its replacement.
// Redirects are refused rather than followed, no proxy is consulted, no credential is sent, and one
// deadline covers connect, headers and body, whose size is capped while it is read.
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { request } from 'node:https';
import { isIP } from 'node:net';
import { checkServerIdentity, type TLSSocket } from 'node:tls';
import { problemClass } from '../../lib/errors.ts';

export interface PinnedGet {
  podIp: string;
  port: number;
  /** The DNS name the server's certificate must carry; also the SNI and the Host header. */
  serverName: string;
  path: string;
  /** GET unless given; a POST sends `body` as `application/json` with its exact length. */
  method?: 'GET' | 'POST';
  body?: Uint8Array;
  /** PEM bundle of the only roots trusted for this call. */
  caPem: string;
  /** One deadline for connect, TLS, headers and body. */
  timeoutMs: number;
  maxBodyBytes: number;
  signal: AbortSignal;
}

export interface PinnedResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export type PinnedFailureCode =
  | 'bad-endpoint'
  | 'tls-refused'
  | 'redirect-refused'
  | 'body-too-large'
  | 'deadline-exceeded'
  | 'aborted'
  | 'unreachable'
  | 'bad-response';

/** The message is a fixed phrase, a status or a Node error code: never response content. */
export class PinnedHttpsError extends problemClass({ status: 502, title: 'Pinned HTTPS request failed' }) {
  constructor(
    override readonly code: PinnedFailureCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, { ...options, code });
  }
}

/** Node's codes for a certificate the client refused (chain, validity, name) or a failed handshake. */
const TLS_ERROR = /CERT|SIGNATURE|SELF_SIGNED|UNABLE_TO_|ALTNAME|ERR_SSL_|ERR_TLS_|HOSTNAME/;

export function pinnedGet(call: PinnedGet): Promise<PinnedResponse> {
  const invalid = endpointProblem(call);
  if (invalid !== undefined) return Promise.reject(new PinnedHttpsError('bad-endpoint', invalid));
  if (call.signal.aborted) return Promise.reject(new PinnedHttpsError('aborted', 'the call was aborted'));
  return new Promise((resolve, reject) => {
    let settled = false;
    let secured = false;
    let responded = false;

    const req = request({
      host: call.podIp,
      port: call.port,
      path: call.path,
      method: call.method ?? 'GET',
      servername: call.serverName,
      ca: call.caPem,
      rejectUnauthorized: true,
      minVersion: 'TLSv1.2',
      // Checked against the DNS name whatever host the socket went to.
      checkServerIdentity: (_host, cert) => checkServerIdentity(call.serverName, cert),
      agent: false,
      headers: {
        host: `${call.serverName}:${call.port}`,
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
    const fail = (code: PinnedFailureCode, message: string, cause?: unknown) => {
      settle(() => reject(new PinnedHttpsError(code, message, { cause })));
      req.destroy();
    };
    const onAbort = () => fail('aborted', 'the call was aborted');
    const timer = setTimeout(
      () => fail('deadline-exceeded', `no full answer within ${call.timeoutMs} ms`),
      call.timeoutMs,
    );
    call.signal.addEventListener('abort', onAbort, { once: true });

    req.on('socket', (socket) => {
      (socket as TLSSocket).once('secureConnect', () => {
        secured = true;
      });
    });
    req.on('error', (error) => {
      const code = (error as NodeJS.ErrnoException).code ?? error.name;
      if (!secured && TLS_ERROR.test(code)) fail('tls-refused', `TLS refused: ${code}`, error);
      else if (responded) fail('bad-response', `the answer broke off: ${code}`, error);
      else fail('unreachable', `no answer: ${code}`, error);
    });
    req.on('response', (res) => {
      responded = true;
      readBody(res, call.maxBodyBytes, {
        fail,
        done: (body) => settle(() => resolve({ status: res.statusCode ?? 0, headers: res.headers, body })),
      });
    });
    req.end(call.body === undefined ? undefined : Buffer.from(call.body));
  });
}

function readBody(
  res: IncomingMessage,
  maxBodyBytes: number,
  to: {
    fail: (code: PinnedFailureCode, message: string, cause?: unknown) => void;
    done: (body: Buffer) => void;
  },
): void {
  const status = res.statusCode ?? 0;
  res.on('error', (error) => to.fail('bad-response', `the answer broke off: ${error.name}`, error));
  res.on('aborted', () => to.fail('bad-response', 'the answer broke off'));
  if (status >= 300 && status < 400) {
    to.fail('redirect-refused', `redirect refused (HTTP ${status})`);
    return;
  }
  if (status < 100 || status > 599) {
    to.fail('bad-response', 'no valid HTTP status');
    return;
  }
  const declared = Number(res.headers['content-length'] ?? 0);
  if (declared > maxBodyBytes) {
    to.fail('body-too-large', `the body exceeds ${maxBodyBytes} bytes`);
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  res.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > maxBodyBytes) to.fail('body-too-large', `the body exceeds ${maxBodyBytes} bytes`);
    else chunks.push(chunk);
  });
  res.on('end', () => {
    if (size <= maxBodyBytes) to.done(Buffer.concat(chunks));
  });
}

/** The socket goes to an IP literal and the certificate is checked for a DNS name: nothing else. */
function endpointProblem(call: PinnedGet): string | undefined {
  if (isIP(call.podIp) === 0) return 'the Pod address is not an IP address';
  if (isIP(call.serverName) !== 0 || !/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/i.test(call.serverName)) {
    return 'the server name is not a DNS name';
  }
  if (!Number.isInteger(call.port) || call.port < 1 || call.port > 65535) return 'the port is out of range';
  if (!call.path.startsWith('/')) return 'the path is not absolute';
  return undefined;
}

// One HTTP request of the load driver, over a fresh connection each time (no keep-alive): a socket
// pooled to an API the harness killed would fail the next request for no reason of the API's own.
import { request } from 'node:http';

export interface RawAnswer {
  status: number;
  text: string;
}

/** Connection refused, reset or cut mid-answer: the request may or may not have reached the API. */
export class ConnectionError extends Error {
  override readonly name = 'ConnectionError';
}

/** No complete answer within the request's time limit. */
export class RequestTimeoutError extends Error {
  override readonly name = 'RequestTimeoutError';
}

export function sendJson(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: unknown,
  timeoutMs: number,
): Promise<RawAnswer> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        agent: false,
        headers: {
          ...headers,
          connection: 'close',
          ...(payload === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', (error) => {
          clearTimeout(timer);
          reject(new ConnectionError(error.message));
        });
        res.on('aborted', () => {
          clearTimeout(timer);
          reject(new ConnectionError('answer cut off'));
        });
      },
    );
    const timer = setTimeout(() => {
      req.destroy(new RequestTimeoutError(`no answer in ${timeoutMs} ms`));
    }, timeoutMs);
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error instanceof RequestTimeoutError ? error : new ConnectionError(error.message));
    });
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

// How the remote commands (`envs`, `attempts`) reach a running server: the URL, the token and a
// typed client whose failures become one line a user can act on.
//
// The token comes from --token, then --token-file, then SANDLOT_TOKEN. With none of them, a local
// embedded configuration mints a dev token (as `sandlot demo` does) after asking the server, with
// an operator token, whether it is embedded too; a production server, or a production
// configuration here, is a usage error: its tokens come from the identity provider.
import { readFile } from 'node:fs/promises';
import { createSandlotClient, type SandlotClient } from '../http/typed-client/client.ts';
import { configFromEnvironment } from './context.ts';
import { DemoError, REQUEST_TIMEOUT_MS, describeProblem, unreachable } from './demo-client.ts';
import { DEMO_SUBJECT, devMinter } from './local-token.ts';
import { UsageError } from './usage.ts';

export interface RemoteOptions {
  url?: string;
  token?: string;
  tokenFile?: string;
  /** The tenant and subject of a minted dev token (embedded only). */
  tenant?: string;
  sub?: string;
}

export const DEFAULT_URL = 'http://127.0.0.1:8080';

/** A refusal or failure the server answered (exit code 1; the problem's text is the message). */
export class RemoteError extends DemoError {}

export interface Remote {
  url: string;
  client: SandlotClient;
}

export function baseUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.protocol === 'http:' || url.protocol === 'https:') return url.toString().replace(/\/+$/, '');
  } catch {
    // Reported below, with the value.
  }
  throw new UsageError(`--url must be an http:// or https:// URL, got "${value}"`);
}

async function givenToken(options: RemoteOptions): Promise<string | null> {
  if (options.token !== undefined && options.tokenFile !== undefined)
    throw new UsageError('give --token or --token-file, not both');
  if (options.token !== undefined) return options.token.trim();
  if (options.tokenFile !== undefined) {
    const text = await readFile(options.tokenFile, 'utf8').catch((error: NodeJS.ErrnoException) => {
      throw new UsageError(`--token-file ${options.tokenFile}: ${error.code ?? error.message}`);
    });
    if (text.trim() === '') throw new UsageError(`--token-file ${options.tokenFile} is empty`);
    return text.trim();
  }
  const env = process.env['SANDLOT_TOKEN'];
  return env === undefined || env.trim() === '' ? null : env.trim();
}

/** Sends through fetch, turning an unreachable server into the same message `demo` gives. */
function sender(url: string) {
  return async (request: Request) => {
    try {
      return await fetch(request, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    } catch (error) {
      throw new DemoError(unreachable(url, error));
    }
  };
}

export async function connect(options: RemoteOptions): Promise<Remote> {
  const url = baseUrl(options.url ?? process.env['SANDLOT_URL'] ?? DEFAULT_URL);
  const token = await givenToken(options);
  const send = sender(url);
  if (token !== null) {
    if (options.tenant !== undefined || options.sub !== undefined)
      throw new UsageError('--tenant and --sub name a minted dev token; a given token names its own');
    return { url, client: createSandlotClient({ baseUrl: url, token, fetch: send }) };
  }
  const config = configFromEnvironment();
  const noToken = 'no token: pass --token, --token-file or set SANDLOT_TOKEN';
  if (config.mode !== 'embedded')
    throw new UsageError(`${noToken} (dev tokens are minted only in embedded mode)`);
  const mint = await devMinter(config, options.tenant ?? 'demo');
  const probe = createSandlotClient({ baseUrl: url, token: await mint('cli-operator', true), fetch: send });
  // A production server has no admin routes: 404, which its document does not list.
  const status: number = (await probe.call('get', '/admin/provider', {})).status;
  if (status === 404)
    throw new UsageError(`${noToken} (${url} runs in production mode, so no dev token is accepted there)`);
  if (status === 401)
    throw new RemoteError(
      `${url} rejected a token signed with the local dev key: the server uses another SANDLOT_DATA_DIR ` +
        '(run this with the same one, from the same directory)',
    );
  const user = await mint(options.sub ?? DEMO_SUBJECT, false);
  return { url, client: createSandlotClient({ baseUrl: url, token: user, fetch: send }) };
}

/** The answer's body when its status is one of `ok`; otherwise the problem, as an error. */
export function expect<A extends { status: number | string; body: unknown }, S extends A['status']>(
  answer: A,
  ok: readonly S[],
): Extract<A, { status: S }>['body'] {
  if ((ok as readonly (number | string)[]).includes(answer.status)) return answer.body;
  const text = describeProblem(Number(answer.status), answer.body);
  // A request the server found malformed is the caller's mistake: a usage error, as the flags are.
  if (answer.status === 400) throw new UsageError(text);
  throw new RemoteError(text);
}

// `sandlot inspector`: the local inspector relay (cli/inspector-relay.ts). It serves a page that
// frames the Stately inspector (https://stately.ai/inspect: the browser needs internet; without it
// the page says so and points to the console) and a WebSocket on the same port; `serve --inspect`,
// `worker --inspect` and `sandlot inspect` send to that WebSocket, and the page shows what they
// send. Runs until SIGINT/SIGTERM.
import { spawn } from 'node:child_process';
import { platform } from 'node:os';
import { startInspectorRelay } from './inspector-relay.ts';
import { baseUrl, DEFAULT_URL } from './remote.ts';

export interface InspectorOptions {
  port: number;
  host: string;
  open: boolean;
  /** The Sandlot server whose console the page points to (default SANDLOT_URL or the local one). */
  url?: string;
}

function openInBrowser(page: string): void {
  const opener = platform() === 'darwin' ? 'open' : platform() === 'win32' ? 'explorer' : 'xdg-open';
  const child = spawn(opener, [page], { stdio: 'ignore', detached: true });
  child.on('error', () =>
    process.stderr.write(`could not start ${opener} to open ${page}: open it by hand\n`),
  );
  child.unref();
}

export async function inspectorCommand(options: InspectorOptions): Promise<void> {
  const server = baseUrl(options.url ?? process.env['SANDLOT_URL'] ?? DEFAULT_URL);
  const relay = await startInspectorRelay({
    port: options.port,
    host: options.host,
    consoleUrl: `${server}/console`,
  });
  const page = `http://${options.host === '0.0.0.0' ? '127.0.0.1' : options.host}:${relay.port}`;
  process.stdout.write(
    `inspector relay on ${page}: open it in a browser, then start \`sandlot serve --inspect ${relay.port}\`, ` +
      `\`sandlot worker --inspect ${relay.port}\` or run \`sandlot inspect <environmentId> --url ws://127.0.0.1:${relay.port}\`\n` +
      `without internet the hosted inspector cannot load: watch Environments at ${server}/console\n`,
  );
  if (options.open) openInBrowser(page);
  const stop = () => void relay.close().finally(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

// `sandlot inspector`: the local inspector relay (@statelyai/inspect's server). It serves a page
// that frames the Stately inspector (https://stately.ai/inspect: the browser needs internet) and a
// WebSocket on the same port; `serve --inspect`, `worker --inspect` and `sandlot inspect` send to
// that WebSocket, and the page shows what they send. Runs until SIGINT/SIGTERM.
import { createInspectorServer } from '@statelyai/inspect/server';

export interface InspectorOptions {
  port: number;
  open: boolean;
}

export async function inspectorCommand(options: InspectorOptions): Promise<void> {
  const relay = createInspectorServer({ port: options.port, autoOpen: options.open });
  const page = `http://localhost:${options.port}`;
  process.stdout.write(
    `inspector relay on ${page}: open it in a browser, then start \`sandlot serve --inspect ${options.port}\`, ` +
      `\`sandlot worker --inspect ${options.port}\` or run \`sandlot inspect <environmentId> --url ws://127.0.0.1:${options.port}\`\n`,
  );
  const stop = () => {
    relay.stop();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  await Promise.resolve();
}

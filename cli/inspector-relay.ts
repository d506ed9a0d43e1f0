// The local inspector relay behind `sandlot inspector`: one port with a WebSocket that
// `serve --inspect`, `worker --inspect` and `sandlot inspect` send to, and a page that frames the
// hosted Stately inspector and hands it every event the WebSocket carries. The hosted inspector is
// on the internet: when the framed page has not said it is ready within a few seconds, the page
// says plainly that it cannot be reached and points to Sandlot's own console, which needs nothing
// from outside.
//
// The relay keeps the last 200 events and sends them to each client that connects, so a page
// opened after `sandlot inspect` still shows the replay. The framed inspector announces itself with
// a `@statelyai.connected` message; until then the page buffers events, then posts each one to it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';

export const HOSTED_INSPECTOR_URL = 'https://stately.ai/inspect';
const KEPT_EVENTS = 200;

export interface RelayOptions {
  port: number;
  host: string;
  /** The inspector the page frames (default the hosted one). */
  inspectorUrl?: string;
  /** Where the page points when the inspector cannot be reached. */
  consoleUrl: string;
  /** How long the page waits for the framed inspector before it says it cannot be reached. */
  readyWithinMs?: number;
}

export interface InspectorRelay {
  port: number;
  close(): Promise<void>;
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

function relayPage(options: Required<Omit<RelayOptions, 'port' | 'host'>>): string {
  const config = JSON.stringify({
    inspectorOrigin: new URL(options.inspectorUrl).origin,
    readyWithinMs: options.readyWithinMs,
  }).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sandlot: Stately inspector relay</title>
<style>
html,body{height:100%;margin:0;font:14px system-ui,sans-serif}
body{display:flex;flex-direction:column}
#notice{padding:.6rem 1rem;background:#fff4d6;border-bottom:1px solid #e0b400}
#notice[hidden]{display:none}
iframe{flex:1;width:100%;border:0}
</style></head><body>
<div id="notice" role="alert" hidden>
<strong>The Stately inspector at ${escapeHtml(options.inspectorUrl)} cannot be reached from this browser.</strong>
It is a hosted page and needs internet access; the events keep arriving here and will show once it loads.
Without internet, watch Environments live in Sandlot's own console:
<a href="${escapeHtml(options.consoleUrl)}">${escapeHtml(options.consoleUrl)}</a>.
</div>
<iframe id="inspector" src="${escapeHtml(options.inspectorUrl)}" title="Stately inspector"></iframe>
<script>
(() => {
  const config = ${config};
  const frame = document.getElementById('inspector');
  const pending = [];
  let ready = false;
  const deliver = (event) => frame.contentWindow.postMessage(event, config.inspectorOrigin);
  window.addEventListener('message', (message) => {
    if (message.source !== frame.contentWindow) return;
    if (!message.data || message.data.type !== '@statelyai.connected') return;
    ready = true;
    document.getElementById('notice').hidden = true;
    pending.splice(0).forEach(deliver);
  });
  setTimeout(() => { if (!ready) document.getElementById('notice').hidden = false; }, config.readyWithinMs);
  const socket = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host);
  socket.onmessage = (message) => {
    const event = JSON.parse(message.data);
    if (ready) deliver(event); else pending.push(event);
  };
})();
</script></body></html>`;
}

export async function startInspectorRelay(options: RelayOptions): Promise<InspectorRelay> {
  const page = relayPage({
    inspectorUrl: options.inspectorUrl ?? HOSTED_INSPECTOR_URL,
    consoleUrl: options.consoleUrl,
    readyWithinMs: options.readyWithinMs ?? 8_000,
  });
  const server: Server = createServer((request, response) => {
    if (request.method !== 'GET' || (request.url ?? '/').split('?')[0] !== '/') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: the relay page is /\n');
      return;
    }
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    response.end(page);
  });
  const sockets = new WebSocketServer({ server });
  const kept: string[] = [];
  sockets.on('connection', (socket) => {
    for (const event of kept) socket.send(event);
    socket.on('message', (data: Buffer) => {
      const event = data.toString();
      kept.push(event);
      if (kept.length > KEPT_EVENTS) kept.shift();
      for (const other of sockets.clients) {
        if (other !== socket && other.readyState === WebSocket.OPEN) other.send(event);
      }
    });
  });
  await new Promise<void>((listening, failed) => {
    server.once('error', failed);
    server.listen(options.port, options.host, () => listening());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const socket of sockets.clients) socket.terminate();
      await new Promise<void>((closed) => sockets.close(() => closed()));
      await new Promise<void>((closed) => server.close(() => closed()));
    },
  };
}

// The AgentHost Workspace contract over both implementations: the embedded Host on its own table
// and Workspace directories (PGlite and PostgreSQL), and the HTTPS client against a stand-in Host
// Pod on 127.0.0.2 with certificates made at test start, answering from an embedded Host so both
// are judged against the same trees on disk.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedAgentHost, type HostAnswer } from '../../actors/agenthost-embedded.ts';
import { AgentHostUnavailableError, flushRequestBodySchema } from '../../actors/agenthost-flush.ts';
import type { AgentHostWorkspaceBinding } from '../../actors/ports.ts';
import { FLUSH_PATH, HttpsAgentHost, TREE_HASH_PATH } from '../../http/clients/agenthost-client.ts';
import { migrate } from '../../store/migrate.ts';
import { backends, openBackend } from '../support/databases.ts';
import { HostPod, type Handler } from '../support/host-pod.ts';
import { createTestCertificateAuthority } from '../support/tls-certificates.ts';
import { defineAgentHostWorkspaceContract } from './agenthost-workspace-cases.ts';

const SERVER_NAME = 'sbx-flush.sandboxes.svc.cluster.local';

for (const backend of backends) {
  defineAgentHostWorkspaceContract(`embedded (${backend})`, async () => {
    const handle = await openBackend(backend);
    await migrate(handle.db);
    const stateDir = mkdtempSync(join(tmpdir(), 'sandlot-agenthost-'));
    const embedded = new EmbeddedAgentHost({ db: handle.db, stateDir });
    return {
      host: embedded,
      embedded,
      db: handle.db,
      serve: (binding) => binding,
      unreachable: (binding) => {
        embedded.dropNextCall();
        return binding;
      },
      close: async () => {
        rmSync(stateDir, { recursive: true, force: true });
        await handle.close();
      },
    };
  });
}

/** A Host Pod serving one lease from the embedded Host, as a real Host serves only its own. */
function hostHandler(embedded: EmbeddedAgentHost, serving: () => string): Handler {
  const send = (res: Parameters<Handler>[1], answer: HostAnswer) => {
    const body = JSON.stringify(answer.body);
    res.writeHead(answer.status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(body);
  };
  return (req, res) => {
    // The stand-in gives up on a call when its client hangs up, as a stalled Host would be cut off.
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const answer = (async (): Promise<HostAnswer | null> => {
        if (req.method === 'POST' && req.url === FLUSH_PATH) {
          const body = flushRequestBodySchema.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
          return embedded.hostFlush(serving(), body, gone.signal);
        }
        if (req.method === 'GET' && req.url === TREE_HASH_PATH)
          return embedded.hostTreeHash(serving(), gone.signal);
        return null;
      })();
      answer.then(
        (result) => {
          if (result === null) {
            res.writeHead(404).end();
          } else {
            send(res, result);
          }
        },
        (error: unknown) => {
          if (error instanceof AgentHostUnavailableError && error.reason === 'unreachable') res.destroy();
          else if (!res.destroyed) res.writeHead(500).end();
        },
      );
    });
  };
}

/** A loopback port nothing listens on. */
async function closedPort(host: string): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

defineAgentHostWorkspaceContract('HTTPS client against a stand-in Host Pod', async () => {
  const handle = await openBackend('pglite');
  await migrate(handle.db);
  const stateDir = mkdtempSync(join(tmpdir(), 'sandlot-agenthost-'));
  const embedded = new EmbeddedAgentHost({ db: handle.db, stateDir });
  const ca = await createTestCertificateAuthority('service-backend-ca');
  const pod = new HostPod(await ca.issue([SERVER_NAME]));
  let serving = '';
  pod.handler = hostHandler(embedded, () => serving);
  const port = await pod.listen('127.0.0.2');
  const deadPort = await closedPort('127.0.0.3');
  const withEndpoint = (binding: AgentHostWorkspaceBinding, ip: string, p: number) => ({
    ...binding,
    endpoint: { podIp: ip, podUid: binding.podUid ?? '', serverName: SERVER_NAME, port: p },
  });
  return {
    host: new HttpsAgentHost({ caPem: ca.caPem, timeoutMs: 5_000 }),
    embedded,
    db: handle.db,
    serve: (binding) => {
      serving = binding.operationId;
      return withEndpoint(binding, '127.0.0.2', port);
    },
    unreachable: (binding) => withEndpoint(binding, '127.0.0.3', deadPort),
    close: async () => {
      await pod.stop();
      rmSync(stateDir, { recursive: true, force: true });
      await handle.close();
    },
  };
});

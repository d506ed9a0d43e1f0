// The AgentHost subjects the contract suites (Workspace, activation) run against: the embedded Host
// on its own tables and Workspace directories, and the HTTPS client against a stand-in Host Pod on
// 127.0.0.2 with certificates made at test start, answering from an embedded Host so both are judged
// against the same sessions and trees. A Host serves only its own lease, so the stand-in answers for
// the one lease last passed to `serve`; `unreachable` points at a loopback port nothing listens on.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  activationRequestBodySchema,
  sessionStateRequestBodySchema,
} from '../../actors/agenthost/activation.ts';
import { EmbeddedAgentHost, type HostAnswer } from '../../actors/agenthost/embedded.ts';
import type { ActivationHostAnswer } from '../../actors/agenthost/embedded-activation.ts';
import {
  AgentHostUnavailableError,
  flushRequestBodySchema,
  workspaceResumeRequestBodySchema,
} from '../../actors/agenthost/flush.ts';
import type { AgentHostWorkspaceBinding } from '../../actors/ports.ts';
import {
  ACTIVATE_PATH,
  FLUSH_PATH,
  HttpsAgentHost,
  SESSION_STATE_PATH,
  WORKSPACE_RESUME_PATH,
} from '../../http/clients/agenthost-client.ts';
import { migrate } from '../../store/migrate.ts';
import type { AgentHostWorkspaceSubject } from '../contract/agenthost-workspace-cases.ts';
import { openBackend, type BackendName } from './databases.ts';
import { HostPod, type Handler } from './host-pod.ts';
import { createTestCertificateAuthority } from './tls-certificates.ts';

/** A migrated database and an embedded Host on a fresh state directory. */
async function openEmbedded(backend: BackendName) {
  const handle = await openBackend(backend);
  await migrate(handle.db);
  const stateDir = mkdtempSync(join(tmpdir(), 'sandlot-agenthost-'));
  const embedded = new EmbeddedAgentHost({ db: handle.db, stateDir });
  const close = async () => {
    rmSync(stateDir, { recursive: true, force: true });
    await handle.close();
  };
  return { embedded, db: handle.db, close };
}

/** The embedded Host as its own subject; an unreachable Host is one that drops the next call. */
export async function openEmbeddedHost(backend: BackendName): Promise<AgentHostWorkspaceSubject> {
  const { embedded, db, close } = await openEmbedded(backend);
  return {
    host: embedded,
    embedded,
    db,
    serve: (binding) => binding,
    unreachable: (binding) => {
      embedded.dropNextCall();
      return binding;
    },
    close,
  };
}

/** A Host Pod serving one lease from the embedded Host: flush, Workspace resume, activation, session state. */
export function embeddedHostHandler(embedded: EmbeddedAgentHost, serving: () => string): Handler {
  return (req, res) => {
    // The stand-in gives up on a call when its client hangs up, as a stalled Host would be cut off.
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = (): unknown => JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const answer = (async (): Promise<ActivationHostAnswer | HostAnswer | null> => {
        if (req.method !== 'POST') return null;
        if (req.url === WORKSPACE_RESUME_PATH) {
          return embedded.hostWorkspaceResume(
            serving(),
            workspaceResumeRequestBodySchema.parse(body()),
            gone.signal,
          );
        }
        if (req.url === FLUSH_PATH) {
          return embedded.hostFlush(serving(), flushRequestBodySchema.parse(body()), gone.signal);
        }
        if (req.url === ACTIVATE_PATH) {
          return embedded.hostActivate(serving(), activationRequestBodySchema.parse(body()), gone.signal);
        }
        if (req.url === SESSION_STATE_PATH) {
          return embedded.hostSessionState(
            serving(),
            sessionStateRequestBodySchema.parse(body()),
            gone.signal,
          );
        }
        return null;
      })();
      answer.then(
        (result) => {
          if (result === null) {
            res.writeHead(404).end();
          } else {
            res.writeHead(result.status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
            res.end(JSON.stringify(result.body));
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
export async function closedPort(host: string): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * The HTTPS client against a stand-in Host Pod on 127.0.0.2 whose certificate names `serverName`,
 * answering from an embedded Host on PGlite; `unreachable` sends calls to a dead port on 127.0.0.3.
 */
export async function openEmbeddedHostPod(serverName: string): Promise<AgentHostWorkspaceSubject> {
  const { embedded, db, close } = await openEmbedded('pglite');
  const ca = await createTestCertificateAuthority('service-backend-ca');
  const pod = new HostPod(await ca.issue([serverName]));
  let serving = '';
  pod.handler = embeddedHostHandler(embedded, () => serving);
  const port = await pod.listen('127.0.0.2');
  const deadPort = await closedPort('127.0.0.3');
  const withEndpoint = (binding: AgentHostWorkspaceBinding, ip: string, p: number) => ({
    ...binding,
    endpoint: { podIp: ip, podUid: binding.podUid ?? '', serverName, port: p },
  });
  return {
    host: new HttpsAgentHost({ caPem: ca.caPem, timeoutMs: 5_000 }),
    embedded,
    db,
    serve: (binding) => {
      serving = binding.operationId;
      return withEndpoint(binding, '127.0.0.2', port);
    },
    unreachable: (binding) => withEndpoint(binding, '127.0.0.3', deadPort),
    close: async () => {
      await pod.stop();
      await close();
    },
  };
}

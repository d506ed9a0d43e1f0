// The AgentHost inside the fake cluster's Pods, for `--provider agent-sandbox`: every Pod gets the
// IP 127.0.0.1 (the fake kubelet's `podIp`), and one HTTPS server on 127.0.0.1:8443 (the AgentHost
// port the Pod template declares) answers for whichever Pod a connection names. The children reach
// it as production reaches a real Host: the production HTTPS client connects to the Pod IP and
// verifies TLS for the Sandbox's Service DNS name against SANDLOT_AGENTHOST_CA_FILE (a
// `service-backend-ca` made for the run; the server's certificate is issued for
// `*.<namespace>.svc.cluster.local`). The name the client sends (SNI) says which Pod was meant; a
// Pod that does not exist, is not Running or is being deleted answers nothing (the connection is
// dropped), as a gone Pod would. A Pod that runs answers from an embedded AgentHost on the run's
// database: readiness (configured once its lease says the sandbox started, with the Pod's own UID),
// liveness, flush, tree hash, resume activation and session state.
import { mkdir, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { EmbeddedAgentHost } from '../actors/agenthost/embedded.ts';
import { LIVE_PATH, READINESS_PATH } from '../http/clients/agenthost-client.ts';
import { AGENT_HOST_PORT } from '../providers/agent-sandbox/agent-host-profile.ts';
import { LABELS } from '../providers/agent-sandbox/names.ts';
import type { Queryable } from '../store/db.ts';
import type { FakeKubeApi } from '../test/fakes/kube-api/index.ts';
import { embeddedHostHandler } from '../test/support/embedded-host-pod.ts';
import { createTestCertificateAuthority } from '../test/support/tls-certificates.ts';

/** Where the Pods' AgentHost answers: the loopback address every fake Pod is given. */
export const POD_IP = '127.0.0.1';

export interface ChaosAgentHosts {
  /** SANDLOT_AGENTHOST_CA_FILE for every child. */
  env: Record<string, string>;
  /** Answers given, by path and status (`dropped` for a Pod that was not there to answer). */
  answered(): Record<string, number>;
  close(): Promise<void>;
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
};

/** Starts the stand-in, or says why it cannot (the AgentHost port is taken on 127.0.0.1). */
export async function startChaosAgentHosts(
  fake: FakeKubeApi,
  db: Queryable,
  namespace: string,
  runDir: string,
): Promise<ChaosAgentHosts | string> {
  const ca = await createTestCertificateAuthority('service-backend-ca');
  const certificate = await ca.issue([`*.${namespace}.svc.cluster.local`]);
  const caFile = join(runDir, 'agenthost-ca.pem');
  await writeFile(caFile, ca.caPem, { mode: 0o600 });
  const stateDir = join(runDir, 'agenthost');
  await mkdir(stateDir, { recursive: true });
  const host = new EmbeddedAgentHost({ db, stateDir });
  const counts: Record<string, number> = {};
  const count = (key: string) => (counts[key] = (counts[key] ?? 0) + 1);

  /** The lease the Pod a connection names serves, and that Pod's UID; null when no such Pod runs. */
  const servedBy = (req: IncomingMessage): { operationId: string; podUid: string } | null => {
    const sni = (req.socket as TLSSocket & { servername?: string | false }).servername;
    const name = (typeof sni === 'string' ? sni : '').split('.')[0] ?? '';
    const pod = fake.objects.get({ apiVersion: 'v1', kind: 'Pod', namespace, name });
    if (pod === undefined || pod.metadata.deletionTimestamp || pod.status?.['phase'] !== 'Running')
      return null;
    const claim = fake.objects.get({
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
      kind: 'SandboxClaim',
      namespace,
      name,
    });
    const operationId = claim?.metadata.labels?.[LABELS.operationId];
    return operationId === undefined || pod.metadata.uid === undefined
      ? null
      : { operationId, podUid: pod.metadata.uid };
  };

  const server = createServer({ cert: certificate.certPem, key: certificate.keyPem }, (req, res) => {
    const path = (req.url ?? '').split('?')[0] ?? '';
    const pod = servedBy(req);
    if (pod === null) {
      count(`dropped ${path}`);
      req.socket.destroy();
      return;
    }
    res.on('finish', () => count(`${req.method} ${path} ${res.statusCode}`));
    if (req.method === 'GET' && path === LIVE_PATH) return json(res, 200, { status: 'live' });
    if (req.method === 'GET' && path === READINESS_PATH) {
      const target = { operationId: pod.operationId } as Parameters<EmbeddedAgentHost['readiness']>[0];
      host.readiness(target, new AbortController().signal).then(
        (readiness) =>
          json(res, 200, readiness.configured ? { ...readiness, podUid: pod.podUid } : readiness),
        () => res.destroy(),
      );
      return;
    }
    // Flush, tree hash, activation and session state: the embedded Host's own answers for this lease.
    embeddedHostHandler(host, () => pod.operationId)(req, res);
  });
  const listening = await new Promise<string | null>((resolve) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      resolve(
        `the AgentHost stand-in cannot listen on ${POD_IP}:${AGENT_HOST_PORT}: ${error.code ?? error.message}`,
      ),
    );
    server.listen(AGENT_HOST_PORT, POD_IP, () => resolve(null));
  });
  if (listening !== null) return listening;
  return {
    env: { SANDLOT_AGENTHOST_CA_FILE: caFile },
    answered: () => ({ ...counts }),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

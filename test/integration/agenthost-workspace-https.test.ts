// The HTTPS AgentHost client's Workspace calls on the wire, against a stand-in Host Pod on 127.0.0.4
// with certificates made at test start: a flush is one POST of exactly the binding and flush
// identity over a fresh connection, without credentials; the read-only Workspace resume is one POST
// of the binding and resume operation, answered with a content proof. Only a 200
// receipt or a 409 refusal the Host may give is a verdict; any other status, a redirect, an
// oversized body, a certificate for another name or a target without an endpoint leaves the
// outcome unknown (AgentHostUnavailableError).
import type { IncomingHttpHeaders } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  AgentHostFlushRefusedError,
  AgentHostUnavailableError,
  type AgentHostFlushReceipt,
} from '../../actors/agenthost/flush.ts';
import type { AgentHostWorkspaceBinding } from '../../actors/ports.ts';
import { HttpsAgentHost } from '../../http/clients/agenthost-client.ts';
import { HostPod, live, type Handler } from '../support/host-pod.ts';
import { createTestCertificateAuthority } from '../support/tls-certificates.ts';
import { rejection } from '../support/rejection.ts';

const NAME = 'sbx-wire.sandboxes.svc.cluster.local';
const HASH = 'a'.repeat(64);

let pod: HostPod;
let port: number;
let host: HttpsAgentHost;
let seen: { method: string; path: string; headers: IncomingHttpHeaders; body: string }[] = [];

const signal = () => AbortSignal.timeout(5_000);
const binding = (over: Partial<AgentHostWorkspaceBinding> = {}): AgentHostWorkspaceBinding => ({
  environmentId: 'env_1',
  operationId: 'op_1',
  resourceGeneration: 1,
  providerFence: 2,
  resourceId: 'sbx-1',
  endpoint: { podIp: '127.0.0.4', podUid: 'pod-1', serverName: NAME, port },
  podUid: 'pod-1',
  workspaceVolumeId: 'vol_1',
  dataGeneration: 3,
  networkPolicyGeneration: 7,
  ...over,
});
const request = { flushOperationId: 'flush_1', transitionRevision: 9 };
// The binding as it travels: everything but the endpoint.
const wireBinding = {
  environmentId: 'env_1',
  operationId: 'op_1',
  resourceGeneration: 1,
  providerFence: 2,
  resourceId: 'sbx-1',
  podUid: 'pod-1',
  workspaceVolumeId: 'vol_1',
  dataGeneration: 3,
  networkPolicyGeneration: 7,
};
const now = '2026-12-01T14:00:00.000Z';
const receipt: AgentHostFlushReceipt = {
  binding: wireBinding,
  nativeTurns: { flushOperationId: 'flush_1', acceptingTurns: false, drainedTurns: 2, stoppedAt: now },
  cache: { flushOperationId: 'flush_1', durable: true, cacheSha256: HASH, cacheBytes: 10, writtenAt: now },
  flush: {
    flushOperationId: 'flush_1',
    transitionRevision: 9,
    workspaceVolumeId: 'vol_1',
    dataGeneration: 3,
    nextDataGeneration: 4,
    treeHash: HASH,
    fileCount: 2,
    byteCount: 20,
    flushedAt: now,
  },
  journal: { flushOperationId: 'flush_1', checkpointId: 'ckpt_1', upperPosition: 12, journalSha256: HASH },
};

const answering =
  (status: number, body: unknown, headers: Record<string, string> = {}): Handler =>
  (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      seen.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    });
  };

beforeAll(async () => {
  const ca = await createTestCertificateAuthority('service-backend-ca');
  pod = new HostPod(await ca.issue([NAME]));
  port = await pod.listen('127.0.0.4');
  host = new HttpsAgentHost({ caPem: ca.caPem });
});
afterEach(() => {
  pod.handler = live;
  seen = [];
});
afterAll(async () => {
  await pod.stop();
});

describe('the Workspace flush over HTTPS', () => {
  it('is one POST of exactly the binding and flush identity, without credentials', async () => {
    pod.handler = answering(200, receipt);
    const before = pod.connections;
    expect(await host.flush(binding(), request, signal())).toEqual(receipt);
    expect(await host.flush(binding(), request, signal())).toEqual(receipt);
    // A fresh connection for each call.
    expect(pod.connections - before).toBe(2);
    const first = seen[0];
    expect(first?.method).toBe('POST');
    expect(first?.path).toBe('/runtime/v1/workspace/flush');
    expect(JSON.parse(first?.body ?? '')).toEqual({ binding: wireBinding, ...request });
    expect(first?.headers['content-type']).toBe('application/json');
    expect(first?.headers['host']).toBe(`${NAME}:${port}`);
    expect(first?.headers['authorization']).toBeUndefined();
    expect(first?.headers['cookie']).toBeUndefined();
  });

  it('takes a 409 refusal as the Host said it', async () => {
    pod.handler = answering(409, { refused: 'binding-mismatch', message: 'not mine' });
    const error = await rejection(host.flush(binding(), request, signal()));
    expect(error).toBeInstanceOf(AgentHostFlushRefusedError);
    expect(error).toMatchObject({ reason: 'binding-mismatch' });
    // The Host's own words are not passed on to callers.
    expect((error as AgentHostFlushRefusedError).detail).not.toContain('not mine');
  });

  it('refuses a 200 answer that is not JSON', async () => {
    pod.handler = answering(200, 'flushed', { 'content-type': 'text/plain' });
    expect(await rejection(host.flush(binding(), request, signal()))).toMatchObject({
      reason: 'receipt-malformed',
    });
  });

  it.each<[string, Handler, string]>([
    ['a server error', answering(500, { error: 'disk' }), 'bad-response'],
    [
      'a 409 with a refusal the Host may not give',
      answering(409, { refused: 'other', message: '' }),
      'bad-response',
    ],
    ['a redirect', answering(307, {}, { location: '/elsewhere' }), 'redirect-refused'],
    ['a body over the limit', answering(200, { ...receipt, padding: 'x'.repeat(5_000) }), 'body-too-large'],
  ])('leaves the outcome unknown for %s', async (_case, handler, reason) => {
    pod.handler = handler;
    const error = await rejection(host.flush(binding(), request, signal()));
    expect(error).toBeInstanceOf(AgentHostUnavailableError);
    expect(error).toMatchObject({ reason });
    expect(seen.map((r) => r.path)).toEqual(['/runtime/v1/workspace/flush']);
  });

  it('is unavailable for a certificate of another name or a target without an endpoint', async () => {
    pod.handler = answering(200, receipt);
    const otherName = binding({
      endpoint: {
        podIp: '127.0.0.4',
        podUid: 'pod-1',
        serverName: 'sbx-2.sandboxes.svc.cluster.local',
        port,
      },
    });
    expect(await rejection(host.flush(otherName, request, signal()))).toMatchObject({
      reason: 'tls-refused',
    });
    expect(await rejection(host.flush(binding({ endpoint: null }), request, signal()))).toMatchObject({
      reason: 'no-endpoint',
    });
    expect(seen).toEqual([]);
  });
});

describe('the Workspace resume over HTTPS', () => {
  it('is one POST of exactly the binding and resume operation, its content proof checked', async () => {
    const contentProof = { treeHash: HASH, fileCount: 1, byteCount: 5, computedAt: now };
    const answer = { binding: wireBinding, resumeOperationId: 'op-resume-1', contentProof };
    pod.handler = answering(200, answer);
    const asked = { resumeOperationId: 'op-resume-1' };
    expect(await host.workspaceResume(binding(), asked, signal())).toEqual(answer);
    expect(seen[0]).toMatchObject({ method: 'POST', path: '/runtime/v1/workspace/resume' });
    expect(JSON.parse(seen[0]?.body ?? '')).toEqual({ binding: wireBinding, ...asked });
    expect(seen[0]?.headers['authorization']).toBeUndefined();
    expect(
      await rejection(host.workspaceResume(binding({ dataGeneration: 4 }), asked, signal())),
    ).toMatchObject({
      code: 'agenthost-workspace-resume-refused',
      reason: 'receipt-mismatch',
    });
    pod.handler = answering(409, { refused: 'binding-mismatch', message: 'another binding' });
    expect(await rejection(host.workspaceResume(binding(), asked, signal()))).toMatchObject({
      code: 'agenthost-workspace-resume-refused',
      reason: 'binding-mismatch',
    });
  });

  it('asks no tree-hash route: a Host serving only the old GET is unavailable', async () => {
    pod.handler = (req, res) => {
      seen.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: '' });
      res.writeHead(req.url === '/runtime/v1/workspace/resume' ? 404 : 200, {
        'content-type': 'application/json',
      });
      res.end(
        JSON.stringify({ binding: wireBinding, treeHash: HASH, fileCount: 1, byteCount: 5, computedAt: now }),
      );
    };
    const error = await rejection(
      host.workspaceResume(binding(), { resumeOperationId: 'op-resume-1' }, signal()),
    );
    expect(error).toBeInstanceOf(AgentHostUnavailableError);
    expect(seen.map((r) => r.path)).toEqual(['/runtime/v1/workspace/resume']);
  });
});

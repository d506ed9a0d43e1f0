// The embedded Core stand-in's admin routes: an operator registers seeds, accepted commands and
// journal admissions over HTTP, each immutable (identical repeat 200, different 409), and the
// embedded Core port then answers exactly what was registered. A seed is a raw octet stream bounded
// by the seed limit, not the JSON body limit; that exemption exists only in embedded mode.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_SEED_BYTES } from '../../actors/build-test/accepted-command.ts';
import { EmbeddedCore } from '../../actors/build-test/core-embedded.ts';
import type { AcceptedBuildTestCommand, JournalAcknowledgment } from '../../actors/ports.ts';
import { MAX_BODY_BYTES } from '../../lib/limits.ts';
import {
  acknowledgmentFor,
  actorOf,
  freshCheckpoint,
  sha256,
  version1Command,
  version2Command,
} from '../support/build-test-commands.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { embeddedAndProductionApps } from '../support/admin-apps.ts';

const key = new Uint8Array(32).fill(7);
let handle: BackendHandle;
let h: Harness;
let operator: string;
let user: string;
let app: ReturnType<typeof embeddedAndProductionApps>['app'];
let production: ReturnType<typeof embeddedAndProductionApps>['production'];

beforeAll(async () => {
  handle = await openBackend('pglite');
  h = await buildHarness(handle.db, { key });
  ({ app, production } = embeddedAndProductionApps(handle.db, h, key));
  operator = await h.token('acme', 'ops', { operator: true });
  user = await h.token('acme', 'alice');
});
afterAll(async () => {
  await h.close();
  await handle.close();
});

const seedPath = (tenant = 'acme', project = 'checkout') =>
  `/admin/tenants/${tenant}/projects/${project}/core/workspace-seeds`;
const checkpointPath = (c: AcceptedBuildTestCommand['checkpoint']) =>
  `/admin/tenants/${c.tenantId}/projects/${c.projectId}/runs/${c.runId}/core/build-test/steps/${c.stepId}/checkpoints/${c.checkpointId}`;

function send(method: string, path: string, token: string, body: unknown, target = app) {
  const binary = body instanceof Uint8Array;
  return target.request(path, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': binary ? 'application/octet-stream' : 'application/json',
    },
    body: binary ? body : JSON.stringify(body),
  });
}

const bodyOf = ({ checkpoint: _c, ...rest }: AcceptedBuildTestCommand) => rest;
const admissionOf = ({ checkpoint: _c, ...rest }: JournalAcknowledgment) => rest;
const problemType = async (res: Response) => ((await res.json()) as { type: string }).type;
const core = () => new EmbeddedCore(handle.db);
const signal = () => AbortSignal.timeout(10_000);

describe('embedded Core admin routes', () => {
  it('are for operators only', async () => {
    const res = await send('POST', seedPath(), user, randomBytes(10));
    expect(res.status).toBe(403);
    const command = version1Command();
    expect((await send('PUT', checkpointPath(command.checkpoint), user, bodyOf(command))).status).toBe(403);
  });

  it('register a seed by content, larger than the JSON body limit, once', async () => {
    const seed = randomBytes(MAX_BODY_BYTES * 4);
    const first = await send('POST', seedPath(), operator, seed);
    expect(first.status).toBe(201);
    expect(await first.json()).toEqual({
      tenantId: 'acme',
      projectId: 'checkout',
      sha256: sha256(seed),
      length: seed.length,
    });
    expect((await send('POST', seedPath(), operator, seed)).status).toBe(200);
  });

  it(`refuse a seed over ${MAX_SEED_BYTES} bytes, an empty one and one that is not an octet stream`, async () => {
    expect((await send('POST', seedPath(), operator, new Uint8Array(MAX_SEED_BYTES + 1))).status).toBe(413);
    expect((await send('POST', seedPath(), operator, new Uint8Array(0))).status).toBe(400);
    const json = await app.request(seedPath(), {
      method: 'POST',
      headers: { authorization: `Bearer ${operator}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(json.status).toBe(415);
  });

  it('keep the JSON body limit everywhere else, and for the seed path outside embedded mode', async () => {
    const command = version1Command();
    const big = {
      ...bodyOf(command),
      options: { ...command.options, environment: { PAD: 'x'.repeat(MAX_BODY_BYTES) } },
    };
    expect((await send('PUT', checkpointPath(command.checkpoint), operator, big)).status).toBe(413);
    expect(
      (await send('POST', seedPath(), operator, randomBytes(MAX_BODY_BYTES + 1), production)).status,
    ).toBe(413);
  });

  it('register an accepted command that the embedded Core then resolves exactly', async () => {
    const command = version1Command();
    const res = await send('PUT', checkpointPath(command.checkpoint), operator, bodyOf(command));
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual(command);
    expect((await send('PUT', checkpointPath(command.checkpoint), operator, bodyOf(command))).status).toBe(
      200,
    );
    expect(await core().acceptedCommand(actorOf('acme', 'alice', 't'), command.checkpoint, signal())).toEqual(
      command,
    );
  });

  it('refuse a different command for an accepted checkpoint, and a taken operation ID', async () => {
    const command = version1Command();
    await send('PUT', checkpointPath(command.checkpoint), operator, bodyOf(command));
    const other = { ...bodyOf(command), command: { executable: '/bin/sh', args: ['-c', 'true'] } };
    const changed = await send('PUT', checkpointPath(command.checkpoint), operator, other);
    expect(changed.status).toBe(409);
    expect(await problemType(changed)).toBe('urn:sandlot:problem:core-command-immutable');
    const taken = await send('PUT', checkpointPath(freshCheckpoint()), operator, bodyOf(command));
    expect(taken.status).toBe(409);
    expect(await problemType(taken)).toBe('urn:sandlot:problem:core-operation-taken');
  });

  it('register a version 2 command only after its seed', async () => {
    const seed = randomBytes(2048);
    const command = version2Command(seed);
    const early = await send('PUT', checkpointPath(command.checkpoint), operator, bodyOf(command));
    expect(early.status).toBe(409);
    expect(await problemType(early)).toBe('urn:sandlot:problem:core-seed-not-registered');
    expect((await send('POST', seedPath(), operator, seed)).status).toBe(201);
    expect((await send('PUT', checkpointPath(command.checkpoint), operator, bodyOf(command))).status).toBe(
      201,
    );
    const bytes = await core().workspaceSeed(actorOf('acme', 'alice', 't'), command, signal());
    expect(Buffer.from(bytes).equals(seed)).toBe(true);
  });

  it.each([
    [
      'version 1 without outputs',
      (c: AcceptedBuildTestCommand) => ({ ...bodyOf(c), options: { ...c.options, outputs: [] } }),
    ],
    ['no version', (c: AcceptedBuildTestCommand) => ({ ...bodyOf(c), version: undefined })],
    [
      'a relative executable',
      (c: AcceptedBuildTestCommand) => ({ ...bodyOf(c), command: { executable: 'make', args: [] } }),
    ],
    [
      'an output inside .git',
      (c: AcceptedBuildTestCommand) => ({
        ...bodyOf(c),
        options: { ...c.options, outputs: ['.git/config'] },
      }),
    ],
    ['an image field', (c: AcceptedBuildTestCommand) => ({ ...bodyOf(c), image: 'evil:latest' })],
  ])('refuse a command with %s (400)', async (_name, change) => {
    const command = version1Command();
    const res = await send('PUT', checkpointPath(command.checkpoint), operator, change(command));
    expect(res.status).toBe(400);
  });

  it('record the admitted journal acknowledgment the embedded Core then verifies', async () => {
    const command = version1Command();
    await send('PUT', checkpointPath(command.checkpoint), operator, bodyOf(command));
    const admission = admissionOf(acknowledgmentFor(command));
    const path = `${checkpointPath(command.checkpoint)}/journal-admission`;
    expect((await send('PUT', path, operator, admission)).status).toBe(201);
    expect((await send('PUT', path, operator, admission)).status).toBe(200);
    const different = await send('PUT', path, operator, { ...admission, journalPosition: 7 });
    expect(await problemType(different)).toBe('urn:sandlot:problem:core-admission-immutable');
    const unknown = await send('PUT', path, operator, { ...admission, operationId: 'op-nope' });
    expect(await problemType(unknown)).toBe('urn:sandlot:problem:core-operation-unknown');
    const verdict = await core().verifyAcknowledgment(
      actorOf('acme', 'alice', 't'),
      acknowledgmentFor(command),
      signal(),
    );
    expect(verdict).toEqual({ verified: true });
  });
});

// What the Core HTTP adapter refuses, against a stand-in Core on 127.0.0.1 that misbehaves on
// purpose: seeds one byte short or long (declared or streamed), a wrong digest, a redirect, a wrong
// media type, a cacheable answer, bodies past their limit, a slow body past the deadline, metadata
// that changed after the transfer, and statuses that are not answers. Also: the seed at exactly its
// admitted limit, and what the adapter sends (the actor's bearer, no-store, nothing once expired).
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MAX_CHECKPOINT_JSON_BYTES, MAX_SEED_BYTES } from '../../actors/build-test/accepted-command.ts';
import {
  CoreAnswerRefusedError,
  CoreCommandChangedError,
  CoreDeniedError,
  CoreUnavailableError,
} from '../../actors/build-test/core-errors.ts';
import type { AcceptedBuildTestCommand } from '../../actors/ports.ts';
import { HttpCore } from '../../http/clients/core-client.ts';
import {
  acknowledgmentFor,
  actorOf,
  version1Command,
  version2Command,
} from '../support/build-test-commands.ts';
import {
  MemoryCoreBackend,
  sendJson,
  sendSeed,
  startCoreStandIn,
  type CoreStandIn,
} from '../support/core-stand-in.ts';
import { rejection } from '../support/rejection.ts';

const actor = actorOf('acme', 'alice', 'acme-alice-token');
const signal = () => AbortSignal.timeout(20_000);

let server: CoreStandIn;
const backend = new MemoryCoreBackend();
let core: HttpCore;

beforeAll(async () => {
  server = await startCoreStandIn({
    backend,
    bearers: { 'acme-alice-token': { tenantId: 'acme', subject: 'alice' } },
  });
  core = new HttpCore({ baseUrl: server.url, timeoutMs: 2_000, seedTimeoutMs: 2_000 });
});
afterEach(() => {
  server.intercept = undefined;
  server.requests.length = 0;
});
afterAll(() => server.close());

async function refusedWith(promise: Promise<unknown>, reason: string): Promise<void> {
  const error = await rejection(promise);
  expect(error).toBeInstanceOf(CoreAnswerRefusedError);
  expect((error as CoreAnswerRefusedError).reason).toBe(reason);
}

/** A version 2 command with its seed, served by the backend. */
function withSeed(size = 4096): { command: AcceptedBuildTestCommand; seed: Buffer } {
  const seed = randomBytes(size);
  const command = version2Command(seed);
  backend.put(command, seed);
  return { command, seed };
}

/** Answers the seed route with `write`; everything else comes from the backend. */
function onSeed(write: (res: ServerResponse, seed: Buffer) => void, seed: Buffer): void {
  server.intercept = ({ route, res }) => {
    if (route !== 'workspace-seed') return false;
    write(res, seed);
    return true;
  };
}

describe('the Core HTTP adapter', () => {
  it("sends the actor's bearer and no-store, and reads the accepted command", async () => {
    const command = version1Command();
    backend.put(command);
    expect(await core.acceptedCommand(actor, command.checkpoint, signal())).toEqual(command);
    const [request] = server.requests;
    expect(request?.headers.authorization).toBe('Bearer acme-alice-token');
    expect(request?.headers['cache-control']).toBe('no-store');
    expect(request?.path).toBe(
      `/core/tenants/acme/projects/checkout/runs/${command.checkpoint.runId}/build-test/steps/build.test_1/checkpoints/${command.checkpoint.checkpointId}/accepted-command`,
    );
  });

  it('sends nothing once the bearer expired', async () => {
    const expired = { ...actor, expiresAt: new Date(Date.now() - 1000) };
    expect(
      await rejection(core.acceptedCommand(expired, version1Command().checkpoint, signal())),
    ).toBeInstanceOf(CoreDeniedError);
    expect(server.requests).toHaveLength(0);
  });

  it('refuses a bearer that could split a header, without sending it', async () => {
    const bad = { ...actor, bearer: 'abc\r\nx-evil: 1' };
    expect(await rejection(core.acceptedCommand(bad, version1Command().checkpoint, signal()))).toBeInstanceOf(
      CoreDeniedError,
    );
    expect(server.requests).toHaveLength(0);
  });

  it('takes only a fixed https base URL (http on loopback only), without credentials', () => {
    expect(() => new HttpCore({ baseUrl: 'http://core.example/' })).toThrow(/https/);
    expect(() => new HttpCore({ baseUrl: 'https://u:p@core.example/' })).toThrow(/credentials/);
    expect(() => new HttpCore({ baseUrl: 'https://core.example/?x=1' })).toThrow(/query/);
    expect(() => new HttpCore({ baseUrl: 'https://core.example/api' })).not.toThrow();
  });

  it(`fetches a seed of exactly ${MAX_SEED_BYTES} bytes`, async () => {
    const { command, seed } = withSeed(MAX_SEED_BYTES);
    const big = new HttpCore({ baseUrl: server.url, seedTimeoutMs: 60_000 });
    const bytes = await big.workspaceSeed(actor, command, signal());
    expect(bytes.length).toBe(MAX_SEED_BYTES);
    expect(Buffer.from(bytes).equals(seed)).toBe(true);
    backend.seeds.clear();
  });

  it(`refuses an accepted command that binds a seed of ${MAX_SEED_BYTES + 1} bytes`, async () => {
    const { command } = withSeed(16);
    if (command.version !== 2) throw new Error('v2 expected');
    const oversized = {
      ...command,
      workspaceInput: {
        ...command.workspaceInput,
        seed: { sha256: 'a'.repeat(64), length: MAX_SEED_BYTES + 1 },
      },
    };
    server.intercept = ({ route, res }) =>
      route === 'accepted-command' ? (sendJson(res, 200, oversized), true) : false;
    await refusedWith(core.acceptedCommand(actor, command.checkpoint, signal()), 'malformed');
  });

  const seedCases: [string, (res: ServerResponse, seed: Buffer) => void, string][] = [
    ['one byte short (declared)', (res, seed) => sendSeed(res, seed.subarray(0, -1)), 'seed-short'],
    [
      'one byte long (declared)',
      (res, seed) => sendSeed(res, Buffer.concat([seed, Buffer.from([0])])),
      'seed-long',
    ],
    [
      'one byte short (streamed, no length)',
      (res, seed) => {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'cache-control': 'no-store' });
        res.end(seed.subarray(0, -1));
      },
      'seed-short',
    ],
    [
      'one byte long (streamed, no length)',
      (res, seed) => {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'cache-control': 'no-store' });
        res.write(seed);
        res.end(Buffer.from([1]));
      },
      'seed-long',
    ],
    [
      'the right length with a wrong digest',
      (res, seed) => {
        const wrong = Buffer.from(seed);
        wrong[0] = wrong[0]! ^ 1;
        sendSeed(res, wrong);
      },
      'seed-digest-mismatch',
    ],
    [
      'a redirect',
      (res) => {
        res.writeHead(302, { location: `${server.url}elsewhere`, 'cache-control': 'no-store' });
        res.end();
      },
      'redirect-refused',
    ],
    [
      'the wrong media type',
      (res, seed) => sendSeed(res, seed, { 'content-type': 'application/json' }),
      'wrong-content-type',
    ],
    [
      'a cacheable answer',
      (res, seed) => sendSeed(res, seed, { 'cache-control': 'max-age=60' }),
      'not-no-store',
    ],
    ['a 418', (res) => sendJson(res, 418, {}), 'unexpected-status'],
    ['a 404', (res) => sendJson(res, 404, {}), 'no-seed'],
  ];

  it.each(seedCases)('refuses a seed answered with %s', async (_name, write, reason) => {
    const { command, seed } = withSeed();
    onSeed(write, seed);
    await refusedWith(core.workspaceSeed(actor, command, signal()), reason);
    // Refused before the metadata recheck: a redirect is not followed either.
    expect(server.requests.map((r) => r.route)).toEqual(['workspace-seed']);
  });

  it('refuses a seed whose metadata changed after the transfer', async () => {
    const { command, seed } = withSeed();
    const changed = { ...command, selectionHash: '9'.repeat(64) };
    server.intercept = ({ route, res }) => {
      if (route === 'accepted-command') {
        sendJson(res, 200, changed);
        return true;
      }
      if (route === 'workspace-seed') {
        sendSeed(res, seed);
        return true;
      }
      return false;
    };
    expect(await rejection(core.workspaceSeed(actor, command, signal()))).toBeInstanceOf(
      CoreCommandChangedError,
    );
    expect(server.requests.map((r) => r.route)).toEqual(['workspace-seed', 'accepted-command']);
  });

  it('refuses a seed whose command was withdrawn after the transfer', async () => {
    const { command, seed } = withSeed();
    server.intercept = ({ route, res }) => {
      if (route === 'accepted-command') return (sendJson(res, 404, {}), true);
      if (route === 'workspace-seed') return (sendSeed(res, seed), true);
      return false;
    };
    expect(await rejection(core.workspaceSeed(actor, command, signal()))).toBeInstanceOf(
      CoreCommandChangedError,
    );
  });

  it('stops a slow seed body at the deadline, which covers headers and the whole body', async () => {
    const { command, seed } = withSeed(1024);
    const slow = new HttpCore({ baseUrl: server.url, seedTimeoutMs: 400 });
    onSeed((res) => {
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'cache-control': 'no-store',
        'content-length': seed.length,
      });
      // Headers and half the body at once, then a trickle that would end after 1.5 s.
      res.write(seed.subarray(0, 512));
      let sent = 512;
      const timer = setInterval(() => {
        if (sent >= seed.length || res.destroyed) return clearInterval(timer);
        res.write(seed.subarray(sent, sent + 16));
        sent += 16;
      }, 50);
    }, seed);
    const started = Date.now();
    const error = await rejection(slow.workspaceSeed(actor, command, signal()));
    expect(error).toBeInstanceOf(CoreUnavailableError);
    expect((error as CoreUnavailableError).reason).toBe('deadline-exceeded');
    expect(Date.now() - started).toBeLessThan(1_400);
  });

  it('counts waiting for headers against the same deadline', async () => {
    const { command, seed } = withSeed(64);
    const slow = new HttpCore({ baseUrl: server.url, seedTimeoutMs: 300 });
    onSeed((res, bytes) => setTimeout(() => sendSeed(res, bytes), 1_000), seed);
    const error = await rejection(slow.workspaceSeed(actor, command, signal()));
    expect((error as CoreUnavailableError).reason).toBe('deadline-exceeded');
  });

  it('answers an abort mid-body as unavailability', async () => {
    const { command, seed } = withSeed(1024);
    onSeed((res) => {
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'cache-control': 'no-store',
        'content-length': seed.length,
      });
      res.write(seed.subarray(0, 10));
    }, seed);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const error = await rejection(core.workspaceSeed(actor, command, controller.signal));
    expect((error as CoreUnavailableError).reason).toBe('aborted');
  });

  it('treats a body that breaks off as unavailability, not as a short seed', async () => {
    const { command, seed } = withSeed(1024);
    onSeed((res) => {
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'cache-control': 'no-store',
        'content-length': seed.length,
      });
      res.write(seed.subarray(0, 100), () => res.destroy());
    }, seed);
    const error = await rejection(core.workspaceSeed(actor, command, signal()));
    expect(error).toBeInstanceOf(CoreUnavailableError);
    expect((error as CoreUnavailableError).reason).toBe('unreachable');
  });

  it(`refuses checkpoint JSON over ${MAX_CHECKPOINT_JSON_BYTES} bytes, declared or streamed`, async () => {
    const command = version1Command();
    const padded = Buffer.concat([
      Buffer.from(JSON.stringify(command)),
      Buffer.alloc(MAX_CHECKPOINT_JSON_BYTES, 0x20),
    ]);
    server.intercept = ({ res, seen }) => {
      const headers = { 'content-type': 'application/json', 'cache-control': 'no-store' };
      res.writeHead(200, seen === 0 ? { ...headers, 'content-length': padded.length } : headers);
      res.end(padded);
      return true;
    };
    await refusedWith(core.acceptedCommand(actor, command.checkpoint, signal()), 'body-too-large');
    await refusedWith(core.acceptedCommand(actor, command.checkpoint, signal()), 'body-too-large');
  });

  it(`accepts checkpoint JSON of exactly ${MAX_CHECKPOINT_JSON_BYTES} bytes`, async () => {
    const command = version1Command();
    const json = Buffer.from(JSON.stringify(command));
    const padded = Buffer.concat([json, Buffer.alloc(MAX_CHECKPOINT_JSON_BYTES - json.length, 0x20)]);
    server.intercept = ({ res }) => {
      res.writeHead(200, {
        'content-type': 'application/json',
        'cache-control': 'no-store',
        'content-length': padded.length,
      });
      res.end(padded);
      return true;
    };
    expect(await core.acceptedCommand(actor, command.checkpoint, signal())).toEqual(command);
  });

  const metadataCases: [string, (res: ServerResponse, command: AcceptedBuildTestCommand) => void, string][] =
    [
      [
        'malformed JSON',
        (res) => (
          res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }),
          res.end('{')
        ),
        'malformed',
      ],
      ['an unknown field', (res, c) => sendJson(res, 200, { ...c, image: 'evil:latest' }), 'malformed'],
      [
        'another checkpoint',
        (res, c) => sendJson(res, 200, { ...c, checkpoint: { ...c.checkpoint, checkpointId: 'cp-other' } }),
        'reference-mismatch',
      ],
      [
        'version 1 without outputs',
        (res, c) => sendJson(res, 200, { ...c, version: undefined, options: { ...c.options, outputs: [] } }),
        'malformed',
      ],
      [
        'a cacheable answer',
        (res, c) => sendJson(res, 200, c, { 'cache-control': 'private' }),
        'not-no-store',
      ],
      [
        'a redirect',
        (res) => (res.writeHead(307, { location: 'https://elsewhere.example/' }), res.end()),
        'redirect-refused',
      ],
    ];
  it.each(metadataCases)('refuses an accepted command answered with %s', async (_name, write, reason) => {
    const command = version1Command();
    server.intercept = ({ res }) => (write(res, command), true);
    await refusedWith(core.acceptedCommand(actor, command.checkpoint, signal()), reason);
  });

  it.each([
    [401, CoreDeniedError],
    [403, CoreDeniedError],
    [500, CoreUnavailableError],
    [503, CoreUnavailableError],
  ] as const)('maps HTTP %i to %o', async (status, kind) => {
    server.intercept = ({ res }) => (sendJson(res, status, {}), true);
    expect(
      await rejection(core.acceptedCommand(actor, version1Command().checkpoint, signal())),
    ).toBeInstanceOf(kind);
  });

  it('answers an unreachable Core as unavailability', async () => {
    const gone = new HttpCore({ baseUrl: 'http://127.0.0.1:9/core/', timeoutMs: 2_000 });
    const error = await rejection(gone.acceptedCommand(actor, version1Command().checkpoint, signal()));
    expect((error as CoreUnavailableError).reason).toBe('unreachable');
  });

  it('posts the acknowledgment and reads a strict verdict', async () => {
    const command = version1Command();
    const acknowledgment = acknowledgmentFor(command);
    let posted: unknown;
    server.intercept = async ({ req, res }) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      posted = JSON.parse(Buffer.concat(chunks).toString());
      sendJson(res, 200, { verified: true });
      return true;
    };
    expect(await core.verifyAcknowledgment(actor, acknowledgment, signal())).toEqual({ verified: true });
    expect(posted).toEqual(acknowledgment);
    expect(server.requests[0]?.method).toBe('POST');

    server.intercept = ({ res }) => (sendJson(res, 200, { verified: 'yes' }), true);
    await refusedWith(core.verifyAcknowledgment(actor, acknowledgment, signal()), 'malformed');
    server.intercept = ({ res }) => (sendJson(res, 404, {}), true);
    expect((await core.verifyAcknowledgment(actor, acknowledgment, signal())).verified).toBe(false);
  });
});

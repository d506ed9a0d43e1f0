// `sandlot demo --build-test`: on the demo's Active lease, one version 2 BuildTest operation end to
// end. As the operator it registers what Core and Events would hold (a seed: a Git bundle made
// here with the git binary; the checkpoint's accepted command; later the journal admission); as
// the user it asks for the binding, creates the command, waits for it, reads the capture (checked
// against its digest and parsed), acknowledges it and waits for the exact Pods to be deleted; the
// capture then answers 410.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { LoadedBuildTestProfile } from '../config/build-test-profile.ts';
import { parseDocument } from '../formats/awscapt2/output-document.ts';
import { DemoError, pad, waitFor, type Client, type Out } from './demo-client.ts';

const run = promisify(execFile);

export interface BuildTestDemo {
  client: Client;
  out: Out;
  operator: string;
  user: string;
  tenant: string;
  project: string;
  runId: string;
  /** `api/projects/…/environments/{id}`: the demo's Environment, with an Active lease. */
  env: string;
  timeoutMs: number;
  /** The profile the server was started with (the same environment: SANDLOT_BUILDTEST_PROFILE_FILE). */
  profile: LoadedBuildTestProfile | undefined;
}

const FILES: Record<string, string> = {
  'README.md': '# demo app\n',
  'src/index.js': "console.log('hello from the demo');\n",
};

/** A credential-free Git bundle of FILES at one commit, made with the git binary. */
async function seedBundle(): Promise<{ bytes: Buffer; baseSha: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'sandlot-demo-seed-'));
  const git = (...args: string[]) =>
    run(
      'git',
      ['-c', 'core.hooksPath=/dev/null', '-c', 'user.name=demo', '-c', 'user.email=demo@invalid', ...args],
      {
        cwd: dir,
        env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' },
      },
    );
  try {
    await git('init', '-q', '-b', 'main');
    for (const [file, content] of Object.entries(FILES)) {
      await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
      await writeFile(path.join(dir, file), content);
    }
    await git('add', '-A');
    await git('commit', '-qm', 'demo baseline');
    const baseSha = (await git('rev-parse', 'HEAD')).stdout.trim();
    await git('bundle', 'create', '-q', 'seed.bundle', '--all');
    return { bytes: await readFile(path.join(dir, 'seed.bundle')), baseSha };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new DemoError(
      code === 'ENOENT'
        ? '--build-test makes its seed (a Git bundle) with the git binary, which is not on the PATH'
        : `could not make the demo's Git bundle: ${error instanceof Error ? error.message : String(error)}`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

interface Operation {
  state: string;
  step: string | null;
  exitCode: number | null;
  requestFingerprint: string;
  pods: { command: { uid: string; name: string } | null; collector: { uid: string; name: string } | null };
  capture: { sha256: string; length: number } | null;
  error: { code?: string; message?: string } | null;
  cleanedAt: string | null;
}

export async function buildTestDemo(d: BuildTestDemo): Promise<void> {
  const { client, out, operator, user } = d;
  if (d.profile === undefined) {
    throw new DemoError(
      '--build-test needs the server started with an AcceptedBuildTestProfile: set ' +
        'SANDLOT_BUILDTEST_PROFILE_FILE (docs/build-test.md#configuration) for both `sandlot serve` and the demo',
    );
  }
  const { profile } = d.profile;
  if (!profile.versions.includes('v2'))
    throw new DemoError('--build-test runs a version 2 command; the profile has no v2');
  const executable = profile.executables[0] ?? '/usr/bin/make';
  out.line('');
  out.line('BuildTest (version 2) on the Active lease:');

  const admin = `admin/tenants/${d.tenant}/projects/${d.project}`;
  const seed = await seedBundle();
  const stored = await client.raw(
    'register seed',
    'POST',
    `${admin}/core/workspace-seeds`,
    operator,
    seed.bytes,
  );
  if (stored.status !== 200 && stored.status !== 201) throw new DemoError(`register seed: ${stored.problem}`);
  const { sha256, length } = JSON.parse(stored.bytes.toString('utf8')) as { sha256: string; length: number };
  out.line(
    `✓ seed registered: a Git bundle of ${Object.keys(FILES).length} files, ${length} bytes, sha256 ${sha256.slice(0, 12)}…`,
  );

  const checkpointId = 'cp-demo';
  const checkpoint = {
    tenantId: d.tenant,
    projectId: d.project,
    runId: d.runId,
    stepId: 'build',
    checkpointId,
  };
  const checkpointPath = `${admin}/runs/${d.runId}/core/build-test/steps/build/checkpoints/${checkpointId}`;
  const operationId = `op-${d.runId}-${checkpointId}`;
  await client.call('accepted command', 'PUT', checkpointPath, operator, {
    operationId,
    selectionHash: createHash('sha256').update(d.runId).digest('hex'),
    version: 2,
    command: { executable, args: ['run', 'build'] },
    options: {
      workingDirectory: '.',
      environment: { CI: 'true' },
      timeoutSeconds: 600,
      outputs: ['dist/app.js'],
    },
    workspaceInput: {
      workspaceId: 'demo-workspace',
      workspaceIncarnationId: 'demo-1',
      baseSha: seed.baseSha,
      branchName: 'main',
      seed: { sha256, length },
    },
  });
  out.line(
    `✓ Core accepted ${executable} run build for checkpoint ${checkpointId} (operation ${operationId})`,
  );

  const bt = `${d.env}/sandbox/build-test`;
  const prepared = await client.call<{ binding: Record<string, unknown>; profileHash: string }>(
    'binding preparation',
    'GET',
    `${bt}/binding-preparation?sessionId=demo&executionProfileReference=demo`,
    user,
  );
  out.line(
    `✓ binding: lease ${String(prepared.body.binding['leaseOperationId'])}, profile ${prepared.body.profileHash.slice(0, 12)}…`,
  );
  const created = await client.call<{ operation: Operation; replay: boolean }>(
    'create command',
    'POST',
    `${bt}/commands`,
    user,
    {
      checkpoint,
      expectedBinding: prepared.body.binding,
    },
  );
  out.line(`✓ command reserved (HTTP ${created.status}, replay ${String(created.body.replay)})`);

  const read = async () =>
    (
      await client.call<{ operation: Operation }>(
        'read command',
        'GET',
        `${bt}/commands/${operationId}`,
        user,
      )
    ).body.operation;
  const done = await waitFor(
    out,
    'command',
    d.timeoutMs,
    read,
    (o) => ({ text: `${pad(o.state, 12)} step ${o.step ?? '-'}`, key: `${o.state}/${o.step ?? '-'}` }),
    (o) => o.state === 'Succeeded' && o.step === null,
    (o) =>
      o.state === 'Failed' || o.state === 'Interrupted'
        ? `the command ended ${o.state}: ${o.error?.code ?? ''} ${o.error?.message ?? ''}`
        : null,
  );
  out.line(
    `✓ Succeeded: command Pod ${done.pods.command?.name ?? '-'} exited ${String(done.exitCode)}, ` +
      `collector Pod ${done.pods.collector?.name ?? '-'} sealed ${String(done.capture?.length)} bytes`,
  );

  const capture = await client.raw(
    'read capture',
    'GET',
    `${bt}/commands/${operationId}/workspace-capture`,
    user,
  );
  if (capture.status !== 200) throw new DemoError(`read capture: ${capture.problem}`);
  const digest = createHash('sha256').update(capture.bytes).digest('hex');
  if (digest !== done.capture?.sha256 || capture.bytes.length !== done.capture.length)
    throw new DemoError('read capture: the bytes are not the stored digest and length');
  const document = parseDocument(capture.bytes);
  out.line(
    `✓ capture: AWSCAPT2, ${capture.bytes.length} bytes, sha256 ${digest.slice(0, 12)}… matches; files:`,
  );
  for (const f of document.manifest.files) out.line(`    ${pad(f.change, 9)} ${f.path} (${f.size} bytes)`);

  const acknowledgment = {
    checkpoint,
    operationId,
    journalPosition: 1,
    recordSha256: createHash('sha256').update(`${operationId}:${digest}`).digest('hex'),
    objectReference: `source-control://captures/${operationId}`,
    capture: {
      sha256: digest,
      length: capture.bytes.length,
      requestFingerprint: done.requestFingerprint,
      collectorPodUid: done.pods.collector?.uid ?? '',
      commandPodUid: done.pods.command?.uid ?? '',
    },
  };
  // The admission route's path names the checkpoint; its body is the rest.
  const admission = { ...acknowledgment, checkpoint: undefined };
  await client.call('journal admission', 'PUT', `${checkpointPath}/journal-admission`, operator, admission);
  await client.call(
    'acknowledge',
    'POST',
    `${bt}/commands/${operationId}/workspace-capture/acknowledge`,
    user,
    // The original command request travels with the acknowledgment.
    { request: { checkpoint, expectedBinding: prepared.body.binding }, acknowledgment },
  );
  out.line('✓ acknowledgment verified by Core and saved; deleting the exact Pods');
  const cleaned = await waitFor(
    out,
    'cleanup',
    d.timeoutMs,
    read,
    (o) => ({ text: `cleaned ${o.cleanedAt ?? 'not yet'}`, key: o.cleanedAt ?? '-' }),
    (o) => o.cleanedAt !== null,
    () => null,
  );
  const gone = await client.raw(
    'read capture again',
    'GET',
    `${bt}/commands/${operationId}/workspace-capture`,
    user,
  );
  out.line(
    `✓ Pods deleted at ${String(cleaned.cleanedAt)}; the capture now answers ${gone.status} (${gone.problem})`,
  );
}

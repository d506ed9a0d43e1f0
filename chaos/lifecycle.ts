// One Environment's lifecycle under chaos: register → Workspace volume → provision → Active and
// ready for dispatch → abandon-then-release or release → Released, over HTTP. Its path and its
// extra requests are drawn from its own seed before it starts: concurrent duplicates (the same
// request twice at once, one to each API, which must answer the same Environment or operation) and
// stale-fence requests (each under an idempotency key of its own, which must get a 4xx and which no
// journal row or lease may ever carry: the end-of-run check looks for them).
import { authorityLapseCodes } from '../machines/environment-context.ts';
import type { Answer, ChaosClient } from './client.ts';
import { deriveSeed, Rng } from './random.ts';
import type { Recorder } from './recorder.ts';

export interface LifecyclePlan {
  abandon: boolean;
  duplicateRegister: boolean;
  duplicateProvision: boolean;
  duplicateRelease: boolean;
  staleReleaseGeneration: boolean;
  staleProvisionWhileCurrent: boolean;
  staleAbandonFence: boolean;
  staleAbandonAfterRelease: boolean;
  provisionAfterReleased: boolean;
}

export function planLifecycle(seed: number, index: number): LifecyclePlan {
  const rng = new Rng(deriveSeed(seed, 'environment', index));
  const abandon = rng.chance(0.3);
  return {
    abandon,
    duplicateRegister: rng.chance(0.2),
    duplicateProvision: rng.chance(0.2),
    duplicateRelease: rng.chance(0.2),
    staleReleaseGeneration: rng.chance(0.1),
    staleProvisionWhileCurrent: rng.chance(0.1),
    staleAbandonFence: rng.chance(0.1),
    staleAbandonAfterRelease: abandon && rng.chance(0.3),
    provisionAfterReleased: rng.chance(0.1),
  };
}

/**
 * `parked, then released`: the provision result was committed while its provisioner's authority
 * check could not answer (or had lapsed), so the lease was parked in ReconciliationRequired. That is
 * the documented behaviour, not a finding: nothing revives a parked lease, a caller releases it.
 */
export type Outcome = 'released' | 'abandoned, then released' | 'parked, then released' | 'failed';

export interface EnvironmentRecord {
  index: number;
  key: string;
  plan: LifecyclePlan;
  environmentId: string | null;
  operationId: string | null;
  outcome: Outcome | null;
  /** What went wrong, for `failed`. */
  failure: string | null;
  /** Idempotency keys of the stale requests sent: none may ever reach a journal row or a lease. */
  staleKeys: string[];
  /** One line per request and its answer (kept in the results for lifecycles with findings). */
  trace: string[];
  /**
   * The first answer that said the Environment is Released, and when the client had it (epoch
   * milliseconds): the whole-run check (chaos/timeline.ts) finds any resource of it live after that.
   */
  releasedAnswer: { atMs: number; what: string } | null;
  startedAtMs: number;
  endedAtMs: number | null;
}

export interface LifecycleContext {
  client: ChaosClient;
  recorder: Recorder;
  environments: string;
  deadlineMs: number;
  /** Called once the Workspace volume exists (Agent Sandbox: plant its PVC, as storage would). */
  onVolume?: (
    environmentId: string,
    volume: { volumeId: string; resourceGeneration: number; dataGeneration: number },
  ) => void;
}

class LifecycleFailure extends Error {
  override readonly name = 'LifecycleFailure';
}

/** The lease as the inspection shows it (actors/sandbox/view.ts), as far as a lifecycle reads it. */
interface LeaseSeen {
  state?: string;
  current?: boolean;
  failure?: { code?: string } | null;
}

/**
 * The authority lapse code of a parked lease (ReconciliationRequired, `failure.code` one of
 * authorityLapseCodes), else null. Reconciliation never revives a parked lease (docs/api.md,
 * reconcile): only a release or abandon by a caller who holds authority now ends it.
 */
export function parkedLapse(lease: LeaseSeen | undefined): string | null {
  const code = lease?.failure?.code;
  if (lease?.state !== 'ReconciliationRequired' || typeof code !== 'string') return null;
  return (authorityLapseCodes as readonly string[]).includes(code) ? code : null;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const POLL_MS = 400;
/** Waits before the nth poll of one wait: 300 ms, growing by half each time, at most 1.5 s. */
const pollDelay = (n: number) => Math.min(1_500, 300 * 1.5 ** n) * (0.8 + Math.random() * 0.4);
const typeOf = (answer: Answer) => {
  const type = answer.body['type'];
  return typeof type === 'string' ? type.replace('urn:sandlot:problem:', '') : '';
};
const brief = (answer: Answer) =>
  `${answer.status} ${typeOf(answer) || JSON.stringify(answer.body).slice(0, 200)} (${answer.api})`;

export async function runLifecycle(ctx: LifecycleContext, record: EnvironmentRecord): Promise<void> {
  const { recorder } = ctx;
  const { plan } = record;
  const call = callerFor(ctx, record);
  const deadline = Date.now() + ctx.deadlineMs;
  const expect = (what: string, answer: Answer, statuses: number[]) => {
    if (statuses.includes(answer.status)) return answer.body;
    recorder.find('unexpected-status', `${what}: ${brief(answer)}`, record.environmentId ?? undefined);
    throw new LifecycleFailure(`${what}: ${brief(answer)}`);
  };
  /** The same request twice at once, one to each of the first two APIs. */
  const twice = (method: string, path: string, body: unknown) =>
    Promise.all([call(method, path, body, 0), call(method, path, body, 1)]);
  const stale = async (
    what: string,
    method: string,
    path: string,
    body: { idempotencyKey: string } & Record<string, unknown>,
  ) => {
    record.staleKeys.push(body.idempotencyKey);
    recorder.count(`stale-fence requests: ${what}`);
    const answer = await call(method, path, body);
    // A 5xx is a finding of the client's already; a 2xx means the stale fence was taken.
    if (answer.status < 400) {
      recorder.find('stale-fence-accepted', `${what}: ${brief(answer)}`, record.environmentId ?? undefined);
    }
  };

  // Register.
  const registerBody = { idempotencyKey: record.key };
  let registered: Record<string, unknown>;
  if (plan.duplicateRegister) {
    recorder.count('concurrent duplicates: register');
    const [a, b] = await twice('POST', ctx.environments, registerBody);
    const first = expect('register', a, [200, 201]);
    const second = expect('register (duplicate)', b, [200, 201]);
    if (first['environmentId'] !== second['environmentId'] || (a.status === 201 && b.status === 201)) {
      recorder.find(
        'duplicate-answers-differ',
        `register ${record.key}: ${a.status} ${String(first['environmentId'])} / ${b.status} ${String(second['environmentId'])}`,
      );
    }
    registered = first;
  } else {
    registered = expect('register', await call('POST', ctx.environments, registerBody), [200, 201]);
  }
  const environmentId = String(registered['environmentId']);
  record.environmentId = environmentId;
  const base = `${ctx.environments}/${environmentId}`;

  if (plan.staleReleaseGeneration) {
    await stale('release naming lifecycle generation 2', 'POST', `${base}/release`, {
      expectedLifecycleGeneration: 2,
      idempotencyKey: `stale-release-${record.index}`,
    });
  }

  // Workspace volume and provision.
  const volume = expect(
    'workspace volume',
    await call('POST', `${base}/workspace-volumes`, { idempotencyKey: 'ws-1' }),
    [200, 201],
  );
  ctx.onVolume?.(environmentId, {
    volumeId: String(volume['volumeId']),
    resourceGeneration: Number(volume['resourceGeneration']),
    dataGeneration: Number(volume['dataGeneration']),
  });
  const workspace = {
    volumeId: volume['volumeId'],
    resourceGeneration: volume['resourceGeneration'],
    dataGeneration: volume['dataGeneration'],
    mountPath: '/workspace',
    readOnly: false,
  };
  const provisionBody = { idempotencyKey: 'prov-1', workspace, networkPolicyGeneration: 1 };
  let lease: Record<string, unknown>;
  if (plan.duplicateProvision) {
    recorder.count('concurrent duplicates: provision');
    const [a, b] = await twice('POST', `${base}/sandbox/provision`, provisionBody);
    lease = expect('provision', a, [202]);
    const other = expect('provision (duplicate)', b, [202]);
    if (lease['operationId'] !== other['operationId']) {
      recorder.find(
        'duplicate-answers-differ',
        `provision: operations ${String(lease['operationId'])} / ${String(other['operationId'])}`,
        environmentId,
      );
    }
  } else {
    lease = expect('provision', await call('POST', `${base}/sandbox/provision`, provisionBody), [202]);
  }
  record.operationId = String(lease['operationId']);

  // Active and ready for dispatch.
  let ready: Record<string, unknown> | null = null;
  for (let polls = 0; ready === null; polls++) {
    const seen = expect('inspect', await call('GET', `${base}/sandbox?networkPolicyGeneration=1`), [200]);
    const current = seen['lease'] as LeaseSeen | undefined;
    const lapse = parkedLapse(current);
    if (seen['readyForDispatch'] === true) {
      ready = seen;
    } else if (lapse !== null) {
      // Waiting is pointless: nothing will make this lease ready. Release it as a caller would.
      record.trace.push(`parked: lease ReconciliationRequired (${lapse}); releasing`);
      await releaseEnvironment(ctx, record, Date.now() + ctx.deadlineMs, plan.duplicateRelease);
      recorder.count(`lifecycles parked (lease ReconciliationRequired, ${lapse}), then released`);
      record.outcome = 'parked, then released';
      return;
    } else if (current?.current === false) {
      recorder.find(
        'lifecycle-stuck',
        `lease ended ${String(current.state)} before it was ready`,
        environmentId,
      );
      throw new LifecycleFailure(`lease ${String(current.state)} before ready`);
    } else if (Date.now() > deadline) {
      recorder.find(
        'lifecycle-stuck',
        `not ready for dispatch in ${ctx.deadlineMs / 1000} s (lease ${String(current?.state)})`,
        environmentId,
      );
      throw new LifecycleFailure('not ready in time');
    } else await sleep(pollDelay(polls));
  }
  const active = ready['lease'] as { resourceGeneration: number; providerFence: number };

  if (plan.staleProvisionWhileCurrent) {
    await stale(
      'provision naming Workspace generation 2 while a lease is current',
      'POST',
      `${base}/sandbox/provision`,
      {
        idempotencyKey: `stale-provision-${record.index}`,
        workspace: { ...workspace, resourceGeneration: Number(workspace.resourceGeneration) + 1 },
        networkPolicyGeneration: 1,
      },
    );
  }
  if (plan.staleAbandonFence) {
    await stale('abandon naming the next provider fence', 'POST', `${base}/sandbox/abandon`, {
      resourceGeneration: active.resourceGeneration,
      providerFence: active.providerFence + 1,
      idempotencyKey: `stale-abandon-${record.index}`,
    });
  }

  if (plan.abandon) {
    const fences = { resourceGeneration: active.resourceGeneration, providerFence: active.providerFence };
    for (;;) {
      const answer = await call('POST', `${base}/sandbox/abandon`, {
        ...fences,
        idempotencyKey: 'abandon-1',
      });
      if (answer.status === 202) break;
      if (answer.status === 409 && typeOf(answer) === 'lease-not-abandonable' && Date.now() < deadline) {
        recorder.count('retried: abandon refused while the lease moved (409 lease-not-abandonable)');
        await sleep(POLL_MS);
        continue;
      }
      expect('abandon', answer, [202]);
    }
    for (let polls = 0; ; polls++) {
      const seen = expect('inspect after abandon', await call('GET', `${base}/sandbox`), [200]);
      const current = seen['lease'] as { state?: string; current?: boolean };
      if (current.current === false) break;
      if (Date.now() > deadline) {
        recorder.find('lifecycle-stuck', `abandoned lease still ${String(current.state)}`, environmentId);
        throw new LifecycleFailure('abandoned lease never ended');
      }
      await sleep(pollDelay(polls));
    }
    if (plan.staleAbandonAfterRelease) {
      await stale('abandon of the lease after it was released', 'POST', `${base}/sandbox/abandon`, {
        ...fences,
        idempotencyKey: `stale-abandon-after-${record.index}`,
      });
    }
  }

  await releaseEnvironment(ctx, record, deadline, plan.duplicateRelease);

  if (plan.provisionAfterReleased) {
    await stale('provision after the Environment was released', 'POST', `${base}/sandbox/provision`, {
      ...provisionBody,
      idempotencyKey: `late-provision-${record.index}`,
    });
  }
  record.outcome = plan.abandon ? 'abandoned, then released' : 'released';
}

/** Release (retrying while release is blocked by unresolved attempts), then wait for Released. */
export async function releaseEnvironment(
  ctx: LifecycleContext,
  record: EnvironmentRecord,
  deadline: number,
  duplicate = false,
): Promise<void> {
  const { recorder } = ctx;
  const call = callerFor(ctx, record);
  const environmentId = record.environmentId ?? '';
  const base = `${ctx.environments}/${environmentId}`;
  const body = { expectedLifecycleGeneration: 1, idempotencyKey: 'release-1' };
  const fail = (what: string, answer: Answer): never => {
    recorder.find('unexpected-status', `${what}: ${brief(answer)}`, environmentId);
    throw new LifecycleFailure(`${what}: ${brief(answer)}`);
  };
  let state = '';
  for (;;) {
    let answers: Answer[];
    if (duplicate) {
      recorder.count('concurrent duplicates: release');
      answers = await Promise.all([
        call('POST', `${base}/release`, body, 0),
        call('POST', `${base}/release`, body, 1),
      ]);
      duplicate = false;
      const [a, b] = answers as [Answer, Answer];
      const ok = (x: Answer) => x.status === 200 || x.status === 202;
      const blocked = (x: Answer) => x.status === 409 && typeOf(x) === 'release-blocked';
      // The twin may still be refused while blocked (reconciliation ending between the two), but
      // nothing else: the same key names the same release.
      const differ =
        (ok(a) && ok(b) && a.body['environmentId'] !== b.body['environmentId']) ||
        (ok(a) !== ok(b) && !blocked(a) && !blocked(b) && a.status < 500 && b.status < 500);
      if (differ) {
        recorder.find('duplicate-answers-differ', `release: ${brief(a)} / ${brief(b)}`, environmentId);
      }
    } else {
      answers = [await call('POST', `${base}/release`, body)];
    }
    noteReleased(record, answers, 'POST …/release');
    const accepted = answers.find((a) => a.status === 200 || a.status === 202);
    if (accepted !== undefined) {
      state = String(accepted.body['state']);
      break;
    }
    const blocked = answers.every((a) => a.status === 409 && typeOf(a) === 'release-blocked');
    if (!blocked || Date.now() > deadline) fail('release', answers[0] as Answer);
    recorder.count('retried: release blocked by unresolved attempts (409 release-blocked)');
    await sleep(POLL_MS);
  }
  for (let polls = 0; state !== 'Released'; polls++) {
    if (Date.now() > deadline) {
      recorder.find(
        'lifecycle-stuck',
        `release accepted but the Environment is still ${state}`,
        environmentId,
      );
      throw new LifecycleFailure(`still ${state}`);
    }
    await sleep(pollDelay(polls));
    const read = await call('GET', `${base}/lifecycle`);
    if (read.status !== 200) fail('read lifecycle', read);
    noteReleased(record, [read], 'GET …/lifecycle');
    state = String(read.body['state']);
  }
}

/** Keeps the first answer that said Released (a 2xx whose `state` is Released), as received. */
function noteReleased(record: EnvironmentRecord, answers: readonly Answer[], what: string): void {
  const said = answers
    .filter((a) => a.status >= 200 && a.status < 300 && a.body['state'] === 'Released')
    .sort((a, b) => a.receivedAtMs - b.receivedAtMs)[0];
  if (
    said === undefined ||
    (record.releasedAnswer !== null && record.releasedAnswer.atMs <= said.receivedAtMs)
  )
    return;
  record.releasedAnswer = { atMs: said.receivedAtMs, what: `${what} ${said.status} (${said.api})` };
}

/** The client's call with this lifecycle's trace. */
const callerFor =
  (ctx: LifecycleContext, record: EnvironmentRecord) =>
  (method: string, path: string, body?: unknown, pin?: number): Promise<Answer> =>
    ctx.client.call(
      method,
      path,
      body,
      pin === undefined ? { trace: record.trace } : { pin, trace: record.trace },
    );

export { LifecycleFailure };

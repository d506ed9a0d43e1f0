// The benchmark client over real HTTP: each lifecycle registers an Environment, creates its
// Workspace volume, provisions, polls the inspect route until `readyForDispatch` (naming the network
// policy generation), releases, and polls the lifecycle read until Released. `clients` lifecycles
// run at once; requests go round-robin over the API processes. Every request's latency is kept per
// route, with the spans provision→Active (first inspection that shows the lease Active),
// provision→ready, release→Released and the whole lifecycle.
import { PROJECT, RUN } from './stack.ts';
import { Samples } from './stats.ts';
import { progress } from './progress.ts';

export interface DriveOptions {
  apiUrls: string[];
  token: string;
  n: number;
  clients: number;
  /** Pause between two polling reads of one lifecycle. */
  pollMs: number;
  /** Extra query parameters for the polling reads (e.g. a long-poll wait), `k=v&k2=v2`. */
  pollQuery: string;
  /** Distinguishes this point's idempotency keys from every other point's. */
  tag: string;
  label: string;
  lifecycleTimeoutMs?: number;
  /** Hears the client's own steps of each lifecycle (the step timeline: bench/lib/timeline.ts). */
  onStep?: (environmentId: string, step: string) => void;
}

export interface DriveResult {
  completed: number;
  failed: number;
  errors: string[];
  wallMs: number;
  samples: Samples;
  requests: number;
  inspections: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ENVIRONMENTS = `/api/projects/${PROJECT}/runs/${RUN}/environments`;

export async function driveHttp(options: DriveOptions): Promise<DriveResult> {
  const { apiUrls, token, pollMs } = options;
  const samples = new Samples();
  const timeoutMs = options.lifecycleTimeoutMs ?? 120_000;
  const extra = options.pollQuery === '' ? '' : `&${options.pollQuery}`;
  let next = 0;
  let turn = 0;
  let completed = 0;
  let requests = 0;
  let inspections = 0;
  let failures = 0;
  const errors: string[] = [];
  const bar = progress(options.label, options.n);

  const call = async (route: string, method: string, path: string, body?: unknown) => {
    const base = apiUrls[turn++ % apiUrls.length] as string;
    const started = performance.now();
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = (await res.json()) as Record<string, unknown>;
    samples.add(route, performance.now() - started);
    requests++;
    return { status: res.status, json };
  };
  const expect = (what: string, got: { status: number; json: unknown }, statuses: number[]) => {
    if (!statuses.includes(got.status)) {
      throw new Error(`${what}: ${got.status} ${JSON.stringify(got.json).slice(0, 300)}`);
    }
    return got.json as Record<string, unknown>;
  };

  const lifecycle = async (index: number) => {
    const started = performance.now();
    const deadline = started + timeoutMs;
    const key = `${options.tag}-${index}`;
    const registered = expect(
      'register',
      await call('register', 'POST', ENVIRONMENTS, { idempotencyKey: key }),
      [201],
    );
    const environmentId = String(registered['environmentId']);
    const step = (what: string) => options.onStep?.(environmentId, `client: ${what}`);
    const base = `${ENVIRONMENTS}/${environmentId}`;
    const volume = expect(
      'workspace',
      await call('workspace', 'POST', `${base}/workspace-volumes`, { idempotencyKey: 'ws-1' }),
      [201],
    );
    step('provision sent');
    const provisionedLease = expect(
      'provision',
      await call('provision', 'POST', `${base}/sandbox/provision`, {
        idempotencyKey: 'prov-1',
        workspace: {
          volumeId: volume['volumeId'],
          resourceGeneration: volume['resourceGeneration'],
          dataGeneration: volume['dataGeneration'],
          mountPath: '/workspace',
          readOnly: false,
        },
        networkPolicyGeneration: 1,
      }),
      [202],
    );
    const provisioned = performance.now();
    step('provision answered 202');
    let active = false;
    // With a long-poll query, name the revision already seen (`after`), as a client must: without
    // it the wait starts from whatever revision is current when it begins, and can miss a change.
    // The provision's answer names the revision that wrote the lease: the first wait is past it.
    const leaseRevision = provisionedLease['revision'];
    let seenRevision: number | null = typeof leaseRevision === 'number' ? leaseRevision : null;
    for (;;) {
      inspections++;
      const after = extra !== '' && seenRevision !== null ? `&after=${seenRevision}` : '';
      const seen = expect(
        'inspect',
        await call('inspect', 'GET', `${base}/sandbox?networkPolicyGeneration=1${extra}${after}`),
        [200],
      );
      const lease = seen['lease'] as { state?: string } | undefined;
      const revision = seen['environmentRevision'];
      seenRevision = typeof revision === 'number' ? revision : seenRevision;
      if (!active && lease?.state === 'Active') {
        active = true;
        samples.add('provision→Active', performance.now() - provisioned);
        step('saw the lease Active');
      }
      if (seen['readyForDispatch'] === true) break;
      if (performance.now() > deadline)
        throw new Error(`inspect: not ready in time (${JSON.stringify(seen).slice(0, 300)})`);
      if (extra === '') await sleep(pollMs);
    }
    samples.add('provision→ready', performance.now() - provisioned);
    step('saw readyForDispatch');
    step('release sent');
    const released = expect(
      'release',
      await call('release', 'POST', `${base}/release`, {
        expectedLifecycleGeneration: 1,
        idempotencyKey: 'release-1',
      }),
      [200, 202],
    );
    // Like provision→Active, from the answer: the hand-off after the request's commit.
    const releasing = performance.now();
    step('release answered');
    let state = released['state'];
    let revision = released['revision'];
    while (state !== 'Released') {
      if (performance.now() > deadline) throw new Error(`lifecycle: not Released in time (${String(state)})`);
      if (extra === '') await sleep(pollMs);
      const after = extra !== '' && typeof revision === 'number' ? `&after=${revision}` : '';
      const read = expect(
        'lifecycle',
        await call(
          'read lifecycle',
          'GET',
          `${base}/lifecycle${extra === '' ? '' : `?${options.pollQuery}${after}`}`,
        ),
        [200],
      );
      state = read['state'];
      revision = read['revision'];
    }
    samples.add('release→Released', performance.now() - releasing);
    step('saw Released');
    samples.add('whole lifecycle', performance.now() - started);
  };

  const started = performance.now();
  const lanes = Array.from({ length: Math.min(options.clients, options.n) }, async () => {
    while (next < options.n) {
      const index = next++;
      try {
        await lifecycle(index);
        completed++;
      } catch (error) {
        failures++;
        if (errors.length < 20) errors.push(error instanceof Error ? error.message : String(error));
      }
      bar.tick(completed + failures);
    }
  });
  await Promise.all(lanes);
  const wallMs = performance.now() - started;
  bar.done(errors.length === 0 ? undefined : `(${options.n - completed} failed)`);
  return {
    completed,
    failed: options.n - completed,
    errors,
    wallMs,
    samples,
    requests,
    inspections,
  };
}

// How a Workspace retires with its lease, on PostgreSQL with workers (actors/workspace/retirement.ts):
// a suspend release's detach waits for Core — the provider's confirmation records the lease
// Released, and only the placement release route, asking Core again after that wait, detaches the
// volume, so Core abandoning its operation in between leaves the Workspace attached; and a lease
// whose volume counters moved without its own verified flushes leaves the volume attached (held)
// when it is abandoned, rather than handing out data nobody vouches for.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { moveRuntimeOperation } from '../../actors/runtime-core/runtime-core-embedded.ts';
import { readLeaseByOperation } from '../../store/leases.ts';
import { readVolume } from '../../store/workspaces.ts';
import type { Harness } from '../support/harness.ts';
import {
  activeSandbox,
  coreCommits,
  coreSuspends,
  flushVerified,
  openSuspendBackend,
  ownerAbandons,
  stepRefOf,
  type SuspendBackend,
} from '../support/suspend-flow.ts';

let h: Harness;
let runs = 0;
let backend: SuspendBackend;
beforeAll(async () => {
  backend = await openSuspendBackend({ workers: { reconcileEveryMs: 300 } });
  ({ h } = backend);
}, 120_000);
afterAll(() => backend.close());

const typeOf = async (res: Response) => ((await res.json()) as { type: string }).type;

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('Workspace retirement', () => {
  it("keeps a suspend release's Workspace attached until Core is asked again after the provider confirmed", async () => {
    const sandbox = await activeSandbox(h, `run-retire-${++runs}`);
    const fenced = await coreSuspends(h, sandbox);
    const { evidence, volume } = await flushVerified(h, sandbox, fenced);
    const operation = await coreCommits(h, sandbox, fenced.operationId, evidence);

    // The provider releases, but its answer is lost: the reconciler proves the resource gone.
    h.provider.injectFault('release', 'lost-response');
    const body = { operation, evidence };
    const first = await h.request('POST', '/internal/runtime/suspend/release-placement', {
      token: sandbox.s.token,
      body,
    });
    expect(first.status).toBe(202);
    await until('the reconciled release', async () => {
      return (await readLeaseByOperation(h.db, sandbox.lease.operationId))?.state === 'Released';
    });
    // Released on the provider's proof; the Workspace stays where the flush left it.
    expect(await readVolume(h.db, volume.volumeId)).toEqual(volume);

    // Core abandons its operation before it asks again: nothing detaches the Workspace.
    await moveRuntimeOperation(h.db, stepRefOf(sandbox), operation.operationId, 3, 'abandoned');
    const refused = await h.request('POST', '/internal/runtime/suspend/release-placement', {
      token: sandbox.s.token,
      body,
    });
    expect(refused.status).toBe(409);
    expect(await typeOf(refused)).toBe('urn:sandlot:problem:suspend-operation-not-current');
    expect(await readVolume(h.db, volume.volumeId)).toEqual(volume);
  });

  it('holds a Workspace whose data generation moved without the lease’s own verified flush', async () => {
    const sandbox = await activeSandbox(h, `run-retire-${++runs}`);
    const { lease } = sandbox;
    // Something other than a verified flush moved the counters (a bad restore, a manual edit).
    await h.db.query(
      'UPDATE workspace_volumes SET data_generation = data_generation + 1 WHERE volume_id = $1',
      [sandbox.volume.volumeId],
    );
    await ownerAbandons(h, sandbox, 'owner-abandon');
    expect(await readVolume(h.db, sandbox.volume.volumeId)).toMatchObject({
      state: 'Attached',
      attachedLease: lease.resourceGeneration,
      dataGeneration: sandbox.volume.dataGeneration + 1,
    });
  });
});

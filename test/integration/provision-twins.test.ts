// Two copies of one provision request (the same idempotency key), the second overtaken by the
// first: a client that retries on another API process after a lost connection sends exactly this.
// The copy that read "no lease under this key" before its twin committed finds the Workspace
// already attached when it checks it; it must answer its twin's lease as a replay, not 409
// workspace-unavailable. Found by the chaos run (an API killed mid-request).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunSelection, RunSelectionSource } from '../../actors/ports.ts';
import type { Queryable } from '../../store/db.ts';
import { TableRunSelections } from '../../store/run-selections.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario } from '../support/sandbox-flow.ts';

/** The run-selection table, but the next read can be held until released. */
class HoldableSelections implements RunSelectionSource {
  #gate: Promise<void> | null = null;
  #open: () => void = () => undefined;
  held = false;
  constructor(private readonly inner: RunSelectionSource) {}

  holdNext(): void {
    this.#gate = new Promise((resolve) => (this.#open = resolve));
  }

  release(): void {
    this.#open();
  }

  async get(
    tenantId: string,
    projectId: string,
    runId: string,
    via?: Queryable,
  ): Promise<RunSelection | null> {
    const gate = this.#gate;
    if (gate !== null && via === undefined) {
      this.#gate = null;
      this.held = true;
      await gate;
    }
    return this.inner.get(tenantId, projectId, runId, via);
  }
}

describe('a provision overtaken by its twin', () => {
  let handle: BackendHandle;
  let h: Harness;
  let selections: HoldableSelections;

  beforeAll(async () => {
    handle = await openBackend('postgres');
    selections = new HoldableSelections(new TableRunSelections(handle.db));
    h = await buildHarness(handle.db, { workers: false, selections });
  });
  afterAll(async () => {
    await h.close();
    await handle.close();
  });

  it('answers the twin’s lease as a replay, and one lease exists', async () => {
    const s = await setupScenario(h, { run: 'run-twins' });
    const path = `${s.base}/sandbox/provision`;
    selections.holdNext();
    const late = h.request('POST', path, { token: s.token, body: provisionBody(s) });
    await expect.poll(() => selections.held, { timeout: 5_000 }).toBe(true);
    const first = await h.request('POST', path, { token: s.token, body: provisionBody(s) });
    expect(first.status).toBe(202);
    const lease = await json(first);
    selections.release();
    const second = await late;
    expect(second.status).toBe(202);
    expect(await json(second)).toMatchObject({ operationId: lease['operationId'] });
    const leases = await handle.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM sandbox_leases WHERE environment_id = $1`,
      [s.environmentId],
    );
    expect(Number(leases.rows[0]?.n)).toBe(1);
  });

  it('still refuses a different request under another key once the Workspace is attached', async () => {
    const s = await setupScenario(h, { run: 'run-twins-other' });
    const path = `${s.base}/sandbox/provision`;
    expect((await h.request('POST', path, { token: s.token, body: provisionBody(s) })).status).toBe(202);
    const other = await h.request('POST', path, { token: s.token, body: provisionBody(s, 'prov-2') });
    expect(other.status).toBe(409);
  });
});

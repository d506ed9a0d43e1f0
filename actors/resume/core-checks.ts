// Core's side of every resume step, asked the same way by prepare, verify and bootstrap: Core's
// current operation must be exactly the resume operation offered (same terms, state and state
// revision) in the state the step needs, and Core must confirm the evidence it saved for it. The
// Runtime registration Core holds comes back with it (bootstrap compares it with the request's).
import { canonicalJson } from '../../lib/canonical-json.ts';
import { coreActorOf } from '../build-test/requests.ts';
import type { Queryable } from '../../store/db.ts';
import type { Guard } from '../guard.ts';
import type { RuntimeCore } from '../ports.ts';
import type { RuntimeOperationState } from '../runtime-core/runtime-operation.ts';
import type { SuspendActor } from '../suspend/open.ts';
import { askCoreForSuspend, type SuspendCoreFacts } from '../suspend/suspend-checks.ts';
import { ResumeRefusedError } from './errors.ts';
import { savedEvidenceOf, type ResumePrepareRequest } from './requests.ts';

export async function askCoreForResume(
  guard: Guard,
  core: RuntimeCore | undefined,
  actor: SuspendActor,
  request: ResumePrepareRequest,
  state: RuntimeOperationState,
  signal: () => AbortSignal,
  /** The owner's transaction, when asked inside it: authority and an embedded Core read through it. */
  via?: Queryable,
): Promise<SuspendCoreFacts> {
  if (core === undefined) throw new Error('openSuspendStep admitted a step without a Core');
  if (via !== undefined) guard = guard.inside(via);
  const offered = request.operation;
  const coreActor = coreActorOf(actor);
  const facts = await guard.after(() =>
    askCoreForSuspend(
      core,
      coreActor,
      offered.ref,
      { operationId: offered.operationId, states: [state], kind: 'resume' },
      signal(),
      via,
    ),
  );
  const { operation } = facts;
  if (canonicalJson(operation) !== canonicalJson(offered)) {
    throw new ResumeRefusedError(
      'resume-operation-changed',
      `Core holds resume operation ${operation.operationId} at state revision ${operation.stateRevision} with other terms or state than offered; ask Core again`,
    );
  }
  const verdict = await guard.after(() =>
    core.confirmSavedOperation(coreActor, operation, savedEvidenceOf(request), signal(), via),
  );
  if (!verdict.confirmed) {
    throw new ResumeRefusedError(
      'resume-not-confirmed',
      `Core did not confirm the saved evidence of resume operation ${operation.operationId}: ${verdict.reason}`,
    );
  }
  return facts;
}

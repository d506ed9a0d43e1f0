// A tiny language for Environment scenarios: steps are events, or functions of the run so far for
// events that name an attempt (provider results) or the current lease (abandon, reconcile, observe).
import type { EnvironmentEvent, AttemptKind, ResourceSummary } from '../../machines/environment-events.ts';
import type { ProviderEffect } from '../../machines/environment-effects.ts';
import {
  abandon,
  observed,
  reconcile,
  result,
  type EnvironmentSnapshot,
  type LeaseFences,
  type Outcome,
} from './environment-events.ts';
import { initialModel, step, type ModelState } from './environment-model.ts';
import { describeEvent } from './model-paths.ts';

export type Step = EnvironmentEvent | ((run: ModelState) => EnvironmentEvent) | { refuse: Step };

const effects = (run: ModelState): ProviderEffect[] => Object.values(run.issued);

function currentFences({ snapshot }: { snapshot: EnvironmentSnapshot }): LeaseFences {
  const lease = snapshot.context.sandbox.lease;
  if (lease === null) throw new Error('the scenario has no lease yet');
  return { resourceGeneration: lease.resourceGeneration, providerFence: lease.providerFence };
}

/**
 * The result of the latest attempt of `kind` (or the `which`-th one, from 0), echoing its fences.
 * For listOwned, `resources` are what it found (default: the lease's own pod).
 */
export const answer =
  (kind: AttemptKind, outcome: Outcome, options: { which?: number; resources?: ResourceSummary[] } = {}) =>
  (run: ModelState): EnvironmentEvent => {
    const ofKind = effects(run).filter((e) => e.kind === kind);
    const effect = options.which === undefined ? ofKind.at(-1) : ofKind[options.which];
    if (effect === undefined) throw new Error(`no ${kind} attempt to answer`);
    return result(effect, outcome, options.resources ?? null);
  };

export const abandonLease = (run: ModelState) => abandon(currentFences(run));
export const reconcileLease = (run: ModelState) =>
  reconcile(run.snapshot.context.sandbox.lease?.operationId ?? '', currentFences(run));
export const observe = (finished: 'PodSucceeded' | null) => (run: ModelState) =>
  observed(currentFences(run), finished);

/** A step the machine must ignore: the snapshot comes back unchanged. */
export const refuse = (refused: Step): Step => ({ refuse: refused });

/** `kind gN` (resource generation N), plus ` fM` once abandon has moved the fencing generation to M. */
export const effectLabel = ({ kind, fences }: ProviderEffect) =>
  `${kind} g${fences.resourceGeneration}${fences.fencingGeneration > 1 ? ` f${fences.fencingGeneration}` : ''}`;

export function play(steps: Step[]): ModelState & { effects: ProviderEffect[] } {
  let run = initialModel();
  for (const item of steps) {
    const refused = typeof item === 'object' && 'refuse' in item;
    const inner = refused ? item.refuse : item;
    if (typeof inner === 'object' && 'refuse' in inner) throw new Error('refuse(refuse(…)) means nothing');
    const event = typeof inner === 'function' ? inner(run) : inner;
    const next = step(run, event);
    if (refused && next.snapshot !== run.snapshot) {
      throw new Error(`${describeEvent(event)} was accepted: ${JSON.stringify(next.snapshot.value)}`);
    }
    run = next;
  }
  return { ...run, effects: effects(run) };
}

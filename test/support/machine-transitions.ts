// Names every transition of a machine definition (each guarded candidate on its own) and records
// which of them a step takes, so a model-based test can prove its paths cover the whole table.
import {
  createActor,
  type AnyActorRef,
  type AnyActorScope,
  type AnyStateMachine,
  type AnyStateNode,
  type AnyTransitionDefinition,
  type EventFrom,
  type ExecutableActionsFrom,
  type SnapshotFrom,
} from 'xstate';

const nodeName = (node: AnyStateNode) => node.path.join('.') || '(root)';

function label(node: AnyStateNode, trigger: string, index: number, t: AnyTransitionDefinition): string {
  const targets = (t.target ?? []).map(nodeName).join(',') || '(self)';
  return `${nodeName(node)} --${trigger}[${index}]--> ${targets}`;
}

/** Every transition of the definition, as `source --event[candidate]--> target` labels. */
export function definedTransitions(machine: AnyStateMachine): string[] {
  const labels: string[] = [];
  const visit = (node: AnyStateNode) => {
    for (const [eventType, candidates] of node.transitions) {
      candidates.forEach((t, i) => labels.push(label(node, eventType, i, t)));
    }
    (node.always ?? []).forEach((t, i) => labels.push(label(node, 'always', i, t)));
    Object.values(node.states).forEach(visit);
  };
  visit(machine.root);
  return labels;
}

function transitionLabel(t: AnyTransitionDefinition): string {
  const always = t.source.always?.indexOf(t) ?? -1;
  if (always >= 0) return label(t.source, 'always', always, t);
  const eventType = t.eventType as string;
  const index = t.source.transitions.get(eventType)?.indexOf(t) ?? -1;
  if (index < 0) throw new Error(`${eventType} from ${nodeName(t.source)} is not in the definition`);
  return label(t.source, eventType, index, t);
}

export interface TakenStep<TMachine extends AnyStateMachine> {
  snapshot: SnapshotFrom<TMachine>;
  actions: ExecutableActionsFrom<TMachine>[];
  /** Labels of the transitions taken, eventless ones included, in order. */
  taken: string[];
}

/** Per machine, made once: the actor a step's scope names. Its microsteps go to `collecting`. */
const stepActors = new WeakMap<AnyStateMachine, AnyActorRef>();
let collecting: string[] = [];

function stepScope(machine: AnyStateMachine, taken: string[], actions: unknown[]): AnyActorScope {
  let actor = stepActors.get(machine);
  if (actor === undefined) {
    actor = createActor(machine, {
      inspect: (inspection) => {
        if (inspection.type === '@xstate.microstep')
          collecting.push(...inspection._transitions.map(transitionLabel));
      },
    });
    stepActors.set(machine, actor);
  }
  collecting = taken;
  return {
    self: actor,
    id: '',
    sessionId: '',
    system: actor.system,
    logger: () => {},
    defer: () => {},
    emit: () => {},
    stopChild: () => {},
    actionExecutor: (action) => void actions.push(action),
  } as AnyActorScope;
}

/**
 * The pure transition's next snapshot and actions, as `transition()` from xstate answers them, plus
 * the transitions it took. One `machine.transition` call makes all three: its scope collects the
 * actions instead of running them, and the actor the scope names reports the microsteps, so guards
 * are evaluated by xstate itself rather than re-implemented here. (`transition()` would build a new
 * actor, and with it the machine's initial snapshot, on every call: most of a model run's time.)
 */
export function takeStep<TMachine extends AnyStateMachine>(
  machine: TMachine,
  snapshot: SnapshotFrom<TMachine>,
  event: EventFrom<TMachine>,
): TakenStep<TMachine> {
  const taken: string[] = [];
  const actions: ExecutableActionsFrom<TMachine>[] = [];
  const scope: Parameters<TMachine['transition']>[2] = stepScope(machine, taken, actions);
  const next = machine.transition(snapshot, event, scope) as SnapshotFrom<TMachine>;
  return { snapshot: next, actions, taken };
}

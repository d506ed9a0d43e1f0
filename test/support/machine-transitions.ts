// Names every transition of a machine definition (each guarded candidate on its own) and records
// which of them a step takes, so a model-based test can prove its paths cover the whole table.
import {
  createActor,
  transition,
  type AnyMachineSnapshot,
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

/**
 * The pure `transition()` result, plus the transitions it took. Those are read from the
 * microsteps an inspected actor (restored from the same snapshot) reports, so guards are
 * evaluated by xstate itself rather than re-implemented here.
 */
export function takeStep<TMachine extends AnyStateMachine>(
  machine: TMachine,
  snapshot: SnapshotFrom<TMachine>,
  event: EventFrom<TMachine>,
): TakenStep<TMachine> {
  const [next, actions] = transition(machine, snapshot, event);
  const taken: string[] = [];
  const actor = createActor(machine as AnyStateMachine, {
    snapshot: snapshot as AnyMachineSnapshot,
    inspect: (inspection) => {
      if (inspection.type === '@xstate.microstep')
        taken.push(...inspection._transitions.map(transitionLabel));
    },
  });
  actor.start();
  actor.send(event);
  actor.stop();
  return { snapshot: next, actions, taken };
}

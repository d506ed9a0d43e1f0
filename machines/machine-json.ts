// A machine as a plain JSON config, rebuilt from its state nodes: what the Stately editor imports and
// the shape the Stately inspector draws (`@statelyai/inspect` sends an actor's `logic.config`, with
// each function replaced by its name). No functions survive: a named guard or action stays a
// string, a parameterised one keeps its params when they are data, and a higher-order guard
// (`and`, `or`, `not`, `stateIn`) becomes its readable label, since only its name is drawn.
import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition } from 'xstate';
import { childrenOf, guardLabel } from './machine-graph.ts';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export const machineConfigJson = (machine: AnyStateMachine): Record<string, Json> =>
  configOf(machine.root, machine.id);

function configOf(node: AnyStateNode, id?: string): Record<string, Json> {
  const config: Record<string, Json> = {};
  if (id !== undefined) config.id = id;
  if (node.type !== 'atomic' && node.type !== 'compound') config.type = node.type;
  if (node.type === 'compound') config.initial = node.initial.target[0]?.key ?? null;
  if (node.description !== undefined) config.description = node.description;
  if (node.entry.length > 0) config.entry = node.entry.map(actionJson);
  if (node.exit.length > 0) config.exit = node.exit.map(actionJson);
  const on = [...node.transitions.entries()].map(([event, ts]): [string, Json] => [event, candidates(ts)]);
  if (on.length > 0) config.on = Object.fromEntries(on);
  if (node.always !== undefined && node.always.length > 0) config.always = candidates(node.always);
  const children = childrenOf(node);
  if (children.length > 0) config.states = Object.fromEntries(children.map((c) => [c.key, configOf(c)]));
  return config;
}

/** One candidate reads as an object, several as the array xstate tries in order. */
function candidates(transitions: AnyTransitionDefinition[]): Json {
  const all = transitions.map(transitionJson);
  return all.length === 1 ? (all[0] ?? null) : all;
}

function transitionJson(t: AnyTransitionDefinition): Json {
  const json: Record<string, Json> = {};
  const targets = (t.target ?? []).map((target) => targetRef(t.source, target));
  if (targets.length > 0) json.target = targets.length === 1 ? (targets[0] ?? null) : targets;
  if (t.guard !== undefined) json.guard = guardJson(t.guard);
  if (t.actions.length > 0) json.actions = t.actions.map(actionJson);
  if (t.reenter) json.reenter = true;
  return json;
}

/** A sibling by key, a child as `.key`, anything else by its ID (`#environment.sandbox.Active`). */
function targetRef(source: AnyStateNode, target: AnyStateNode): string {
  if (target.parent !== undefined && target.parent === source.parent) return target.key;
  if (target.parent === source) return `.${target.key}`;
  return `#${target.id}`;
}

function guardJson(guard: unknown): Json {
  if (typeof guard === 'string' || typeof guard === 'function') return guardLabel(guard);
  return namedJson(guard as { type: string; params?: unknown });
}

function actionJson(action: unknown): Json {
  if (typeof action === 'string') return action;
  if (typeof action === 'function') return action.name || 'inline';
  return namedJson(action as { type: string; params?: unknown });
}

/** `{ type, params }` keeps its params only when they are data (not a function of the event). */
function namedJson({ type, params }: { type: string; params?: unknown }): Json {
  const data = dataOf(params);
  return data === undefined ? type : { type, params: data };
}

function dataOf(value: unknown): Json | undefined {
  if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) return value as Json;
  if (Array.isArray(value)) {
    const items = value.map(dataOf);
    return items.every((i) => i !== undefined) ? items : undefined;
  }
  if (typeof value !== 'object') return undefined;
  const entries = Object.entries(value).map(([k, v]): [string, Json | undefined] => [k, dataOf(v)]);
  return entries.every(([, v]) => v !== undefined) ? (Object.fromEntries(entries) as Json) : undefined;
}

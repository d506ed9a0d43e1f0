// Running a step on a provider attempt: the attempt is read under its Environment's lock, inside
// the runtime's one entry point, so begin, complete and expire see it and the lease together. The
// Environment comes from the caller where it knows it (a checked hint), else from the attempt row.
import type { EnvironmentEvent } from '../machines/environment-events.ts';
import { readAttempt, readAttemptEnvironment, type AttemptRow } from '../store/attempts.ts';
import type { Queryable } from '../store/db.ts';
import type { EnvironmentRow } from '../store/environments.ts';
import { EnvironmentNotFoundError } from './errors.ts';
import type { ProjectsAuthority, RunSelectionSource } from './ports.ts';
import type { ActorRuntime } from './runtime.ts';

export interface AttemptDeps {
  db: Queryable;
  runtime: ActorRuntime<EnvironmentEvent>;
  /** Who is acting, for the journal (`worker:<host>:<pid>`). */
  actor: string;
  /** Results that could make a lease dispatchable are committed under fresh authority. */
  authority: ProjectsAuthority;
  selections: RunSelectionSource;
}

/** What a step on an attempt does with it under the Environment's lock: the event, and its answer. */
type AttemptStep<T> = (
  tx: Queryable,
  attempt: AttemptRow,
  row: EnvironmentRow,
) => Promise<{ event: EnvironmentEvent | null; value: T }>;

/** A step that found its attempt under another Environment than the one it was told. */
const wrongEnvironment = Symbol('wrong environment');

/**
 * Runs `body` as a runtime step on the attempt's Environment, with the attempt read under its lock.
 * `environmentId`, where the caller knows it (a queue job's hint, an attempt it already read),
 * saves the lookup; a hint the attempt row does not bear out is dropped and the lookup made.
 */
export async function onAttempt<T>(
  deps: AttemptDeps,
  attemptId: string,
  missing: T,
  body: AttemptStep<T>,
  environmentId?: string,
  read: (q: Queryable, attemptId: string) => Promise<AttemptRow | null> = readAttempt,
): Promise<T> {
  if (environmentId !== undefined) {
    const told = await stepOn(deps, environmentId, attemptId, missing, body, read).catch(
      (error: unknown): typeof wrongEnvironment => {
        // No such Environment: the hint was wrong, not the attempt.
        if (error instanceof EnvironmentNotFoundError) return wrongEnvironment;
        throw error;
      },
    );
    if (told !== wrongEnvironment) return told;
  }
  // The Environment of an attempt never changes, so it may be read before the lock.
  const found = await readAttemptEnvironment(deps.db, attemptId);
  if (found === null) return missing;
  const value = await stepOn(deps, found, attemptId, missing, body, read);
  return value === wrongEnvironment ? missing : value;
}

async function stepOn<T>(
  deps: AttemptDeps,
  environmentId: string,
  attemptId: string,
  missing: T,
  body: AttemptStep<T>,
  read: (q: Queryable, attemptId: string) => Promise<AttemptRow | null>,
): Promise<T | typeof wrongEnvironment> {
  const { value } = await deps.runtime.step<T | typeof wrongEnvironment>(
    environmentId,
    async (tx, row) => {
      const attempt = await read(tx, attemptId);
      if (attempt === null) return { event: null, value: missing };
      if (attempt.environmentId !== environmentId) return { event: null, value: wrongEnvironment };
      return body(tx, attempt, row);
    },
    { actor: deps.actor, source: 'worker' },
  );
  return value;
}

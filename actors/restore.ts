// Restores a persisted snapshot: migrations run on read, and a snapshot that still fails to restore
// is reported (the caller quarantines the row) instead of being reset to the initial state.
import { createActor, type AnyMachineSnapshot } from 'xstate';
import type { ActorDefinition } from './definition.ts';
import { MachineVersionUnsupportedError } from './errors.ts';

export type RestoreResult = { ok: true; snapshot: AnyMachineSnapshot } | { ok: false; reason: string };

export function restoreSnapshot(
  definition: ActorDefinition<never>,
  stored: unknown,
  storedVersion: number,
): RestoreResult {
  if (storedVersion > definition.version) {
    throw new MachineVersionUnsupportedError(storedVersion, definition.version);
  }
  let persisted = stored;
  for (let version = storedVersion; version < definition.version; version++) {
    const migration = definition.migrations[version];
    if (migration === undefined) return { ok: false, reason: `no migration from machine version ${version}` };
    try {
      persisted = migration(persisted);
    } catch (error) {
      return { ok: false, reason: `migration from version ${version} failed: ${messageOf(error)}` };
    }
  }
  let snapshot: AnyMachineSnapshot;
  try {
    // createActor without start() is the restore path that works for every snapshot shape.
    snapshot = createActor(definition.machine, {
      snapshot: persisted as never,
    }).getSnapshot() as AnyMachineSnapshot;
  } catch (error) {
    return { ok: false, reason: `snapshot does not restore: ${messageOf(error)}` };
  }
  if (snapshot.status === 'error') {
    return { ok: false, reason: `snapshot restores in error status: ${messageOf(snapshot.error)}` };
  }
  return { ok: true, snapshot };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// Fresh authority for one caller on one project, the one way every use case asks it, and no more
// often than the rule needs: a read asks before it reads and again after its last read or wait
// (`owner` … `check`, or `environment`); a write asks before it reads and again inside the
// transaction before commit, together with the run selection the Environment pinned (`commit`).
// Nothing is cached across requests, and two asks at the same moment are one ask. A caller who
// loses a permission mid-request gets 403 and changes nothing.
import type { Queryable } from '../store/db.ts';
import type { EnvironmentRow } from '../store/environments.ts';
import { ForbiddenError, RunSelectionChangedError, RunSelectionMissingError } from './errors.ts';
import { readOwnedEnvironment, type EnvironmentAddress } from './owned.ts';
import type { Caller, Permission, ProjectsAuthority, RunSelection, RunSelectionSource } from './ports.ts';
import type { CommitContext } from './runtime.ts';

export interface AuthorityDeps {
  db: Queryable;
  authority: ProjectsAuthority;
  selections: RunSelectionSource;
}

export class Guard {
  constructor(
    private readonly deps: AuthorityDeps,
    readonly caller: Caller,
    readonly projectId: string,
    private readonly required: readonly Permission[],
    /** Where this guard's own checks read (`inside`): the owner's transaction, or the pool. */
    private readonly scope?: Queryable,
  ) {}

  /**
   * The same caller's guard for checks made inside `tx` (the owner's transaction): on a one-connection
   * database (PGlite) a read on the pool would wait for the transaction that waits for it.
   */
  inside(tx: Queryable): Guard {
    return new Guard(this.deps, this.caller, this.projectId, this.required, tx);
  }

  /** Asks the authority afresh; throws ForbiddenError naming what is missing. */
  async check(via: Queryable | undefined = this.scope): Promise<void> {
    const granted = await this.deps.authority.permissions(this.caller, this.projectId, via);
    const missing = this.required.filter((p) => !granted.has(p));
    if (missing.length > 0) throw new ForbiddenError(missing);
  }

  /** Fresh authority before and after `work`: nothing it read reaches a caller who lost access. */
  async around<T>(work: () => Promise<T>): Promise<T> {
    await this.check();
    return this.after(work);
  }

  /** `work`, then fresh authority: for a step that follows a check (the wait needs the recheck). */
  async after<T>(work: () => Promise<T>): Promise<T> {
    const value = await work();
    await this.check();
    return value;
  }

  /** The caller's Environment (404 for another tenant's, project's or run's), read between checks. */
  environment(address: EnvironmentAddress): Promise<EnvironmentRow> {
    return this.around(() => readOwnedEnvironment(this.deps.db, this.caller, address));
  }

  /**
   * Fresh authority, then the caller's Environment: the opening half. The caller owes the closing
   * check — `check()` after its last read or wait, or `commit()` for what it writes — before it
   * answers with anything it read.
   */
  async owner(address: EnvironmentAddress): Promise<EnvironmentRow> {
    await this.check();
    return readOwnedEnvironment(this.deps.db, this.caller, address);
  }

  /** The run's provider selection as it stands now (409 when the run has none). */
  async selection(runId: string, via?: Queryable): Promise<RunSelection> {
    const selection = await this.deps.selections.get(this.caller.tenantId, this.projectId, runId, via);
    if (selection === null) throw new RunSelectionMissingError(runId);
    return selection;
  }

  /**
   * The closing check of a read that ends with no commit: authority again, and the run's selection
   * still the one the Environment pinned (409 run-selection-changed otherwise).
   */
  async closing(runId: string, runSelectionHash: string): Promise<void> {
    const selection = await this.checkWithSelection(runId);
    if (selection.selectionHash !== runSelectionHash) throw new RunSelectionChangedError(runId);
  }

  /**
   * Fresh authority and the run's selection, asked at once (two upstream round trips overlap, not
   * follow each other). The permission's answer decides first: a caller without it learns nothing
   * of the selection, whatever the selection service said.
   */
  async checkWithSelection(runId: string, via?: Queryable): Promise<RunSelection> {
    const [checked, selection] = await Promise.allSettled([this.check(via), this.selection(runId, via)]);
    if (checked.status === 'rejected') throw checked.reason;
    if (selection.status === 'rejected') throw selection.reason;
    return selection.value;
  }

  /** Inside the transaction, before commit: authority again, and the selection the row pinned. */
  commit(runId: string): CommitContext {
    return {
      actor: this.caller.subject,
      source: 'http',
      beforeCommit: async (tx, row) => {
        const selection = await this.checkWithSelection(runId, tx);
        if (selection.selectionHash !== row.runSelectionHash) throw new RunSelectionChangedError(runId);
      },
    };
  }
}

/**
 * `context` with `check` asked first inside the transaction, after the owner's lock and reads and
 * before commit: what a step must hear afresh once every database wait is behind it (Core's word
 * on its operation, say), read through `tx` where it reads our database. Throwing rolls the step back.
 */
export function checkedBeforeCommit(
  context: CommitContext,
  check: (tx: Queryable) => Promise<unknown>,
): CommitContext {
  const before = context.beforeCommit;
  return {
    ...context,
    beforeCommit: async (tx, row) => {
      await check(tx);
      await before?.(tx, row);
    },
  };
}

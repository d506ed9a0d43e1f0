// What a simulated BuildTest command does. The accepted executable never runs: the command Pod
// follows a plan, snapshotted into its row when the Pod is created, so a process that restarts
// mid-run finishes the same run from the row, and a finished run is never played again. Applying a
// plan is idempotent (whole-file writes, forced deletes), so a completion interrupted by a crash can
// be applied again by whoever finishes it.
import { createHash } from 'node:crypto';
import { spawn } from 'node:child_process';
import { chmod, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { FileMode } from '../../formats/awscapt2/file-package.ts';
import { pathProblem } from '../../formats/awscapt2/repository-path.ts';
import type { AcceptedCommandSpec, BuildTestBinding, CommandLog, InterruptReason } from '../build-test.ts';
import { definitive } from '../errors.ts';

type Content = string | Uint8Array;

/** A test's script for one command. Paths are repository-relative, like declared outputs. */
export interface SimulatedCommandPlan {
  /** Default 0. */
  exitCode?: number;
  /** Whole-file writes (mode default 100644). */
  write?: Readonly<Record<string, Content | { content: Content; mode?: FileMode }>>;
  delete?: readonly string[];
  /** path → link target, to exercise the collector's refusal of links. */
  symlinks?: Readonly<Record<string, string>>;
  /** FIFOs to create, to exercise the refusal of special files. */
  fifos?: readonly string[];
  /** How long the command stays running; default 0. Past the command's timeout it is interrupted. */
  durationMs?: number;
  /** End the command interrupted instead of exited. */
  interrupt?: { reason: InterruptReason; message?: string };
  /** Text the command prints (the log adds a first and a last line of its own). */
  output?: string;
}

/** The plan as stored in the command Pod's row: plain JSON, contents in base64. */
export interface PlanSnapshot {
  exitCode: number;
  writes: { path: string; mode: FileMode; base64: string }[];
  deletes: string[];
  symlinks: { path: string; target: string }[];
  fifos: string[];
  durationMs: number;
  interrupt: { reason: InterruptReason; message: string } | null;
  output: string;
}

export type PlanFor = (binding: BuildTestBinding, command: AcceptedCommandSpec) => SimulatedCommandPlan;

/** Exit 0, each declared output written with content derived from the operation and the path. */
export const defaultPlan: PlanFor = (binding, command) => ({
  exitCode: 0,
  write: Object.fromEntries(
    command.outputs.map((path) => {
      const digest = createHash('sha256').update(`${binding.operationId}\0${path}`).digest('hex');
      return [path, `simulated output of ${binding.operationId}\npath ${path}\n${digest}\n`];
    }),
  ),
});

function checked(path: string): string {
  const problem = pathProblem(path);
  if (problem !== undefined) {
    throw definitive('invalid-plan', `Simulated BuildTest plan: the path ${JSON.stringify(path)} ${problem}`);
  }
  return path;
}

const bytesOf = (content: Content): Buffer =>
  typeof content === 'string' ? Buffer.from(content, 'utf8') : Buffer.from(content);

export function snapshotPlan(plan: SimulatedCommandPlan, command: AcceptedCommandSpec): PlanSnapshot {
  const durationMs = plan.durationMs ?? 0;
  if (!Number.isSafeInteger(durationMs) || durationMs < 0) {
    throw definitive('invalid-plan', 'Simulated BuildTest plan: durationMs must be a non-negative integer');
  }
  const exitCode = plan.exitCode ?? 0;
  if (!Number.isInteger(exitCode) || exitCode < 0 || exitCode > 255) {
    throw definitive('invalid-plan', 'Simulated BuildTest plan: exitCode must be 0-255');
  }
  const timedOut = durationMs > command.timeoutSeconds * 1000;
  const interrupt: SimulatedCommandPlan['interrupt'] | null =
    plan.interrupt ?? (timedOut ? { reason: 'timeout' } : null);
  return {
    exitCode,
    writes: Object.entries(plan.write ?? {}).map(([path, value]) => {
      const { content, mode } =
        typeof value === 'string' || value instanceof Uint8Array
          ? { content: value, mode: undefined }
          : value;
      return { path: checked(path), mode: mode ?? '100644', base64: bytesOf(content).toString('base64') };
    }),
    deletes: (plan.delete ?? []).map(checked),
    symlinks: Object.entries(plan.symlinks ?? {}).map(([path, target]) => ({ path: checked(path), target })),
    fifos: (plan.fifos ?? []).map(checked),
    durationMs,
    interrupt:
      interrupt === null
        ? null
        : {
            reason: interrupt.reason,
            message: interrupt.message ?? `the command was interrupted (${interrupt.reason})`,
          },
    output: plan.output ?? '',
  };
}

/** Plays the plan's file effects on the prepared repository; safe to repeat. */
export async function applyPlan(repo: string, plan: PlanSnapshot): Promise<void> {
  const at = (path: string) => join(repo, path);
  for (const path of plan.deletes) await rm(at(path), { recursive: true, force: true });
  for (const write of plan.writes) {
    await mkdir(dirname(at(write.path)), { recursive: true });
    // Removed first, so a write replaces a link or FIFO instead of writing through it.
    await rm(at(write.path), { force: true });
    await writeFile(at(write.path), Buffer.from(write.base64, 'base64'));
    await chmod(at(write.path), write.mode === '100755' ? 0o755 : 0o644);
  }
  for (const link of plan.symlinks) {
    await mkdir(dirname(at(link.path)), { recursive: true });
    await rm(at(link.path), { force: true });
    await symlink(link.target, at(link.path));
  }
  for (const path of plan.fifos) {
    await mkdir(dirname(at(path)), { recursive: true });
    await rm(at(path), { force: true });
    await mkfifo(at(path));
  }
}

function mkfifo(path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/mkfifo', ['-m', '600', path], { stdio: 'ignore', env: {} });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`mkfifo exited ${code}`))));
  });
}

/** The command's bounded log: the last `maxBytes` bytes, cut at a character boundary. */
export function commandLog(
  command: Pick<AcceptedCommandSpec, 'executable' | 'args' | 'workingDirectory'>,
  plan: PlanSnapshot,
  maxBytes: number,
): CommandLog {
  const ending =
    plan.interrupt === null ? `exit status ${plan.exitCode}\n` : `interrupted: ${plan.interrupt.reason}\n`;
  const printed = plan.output === '' || plan.output.endsWith('\n') ? plan.output : `${plan.output}\n`;
  const text = `$ ${[command.executable, ...command.args].join(' ')} (simulated, in ${command.workingDirectory})\n${printed}${ending}`;
  const all = Buffer.from(text, 'utf8');
  if (all.length <= maxBytes) return { bytes: all.length, truncated: false, tail: text };
  let start = all.length - maxBytes;
  // Skip UTF-8 continuation bytes, so the tail starts on a whole character.
  while (start < all.length && ((all[start] ?? 0) & 0xc0) === 0x80) start += 1;
  return { bytes: all.length, truncated: true, tail: all.subarray(start).toString('utf8') };
}

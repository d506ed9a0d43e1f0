// The simulated preparation helper and the collector's view of the baseline, both through the `git`
// binary. Git runs as untrusted input would require: no system or global configuration, an empty
// HOME, hooks pointed at /dev/null, no attributes file (so no filter or diff driver can be named),
// no terminal prompt, every transport but `file` refused (a bundle is a local file), fetched objects
// checked. Each child gets the caller's signal and deadline and is killed when either ends; that
// outcome is uncertain, whereas Git refusing the seed is a definitive preparation failure.
import { spawn } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BaselineEntry } from '../../formats/awscapt2/document-manifest.ts';
import { sha256Of, type FileMode } from '../../formats/awscapt2/file-package.ts';
import { uncertain } from '../errors.ts';
import { requestSignal } from '../call-budget.ts';
import type { CallOptions } from '../provider.ts';

const GIT = '/usr/bin/git';
/** The collector reads at most the complete-tree limit; anything Git prints past this is refused. */
const MAX_GIT_OUTPUT = 80 * 1024 * 1024;
const STDERR_TAIL = 2048;

/** Git ran and said no (exit status, or output past its bound): the input is refused, not uncertain. */
export class GitRefused extends Error {
  override readonly name = 'GitRefused';
}

export interface GitContext {
  /** An empty directory Git may treat as HOME. */
  home: string;
  options: CallOptions;
}

const safety = [
  '-c', 'core.hooksPath=/dev/null',
  '-c', 'core.attributesFile=/dev/null',
  '-c', 'core.fsmonitor=false',
  '-c', 'protocol.allow=never',
  '-c', 'protocol.file.allow=always',
  '-c', 'fetch.fsckObjects=true',
  '-c', 'advice.detachedHead=false',
  '-c', 'init.defaultBranch=seed',
]; // prettier-ignore

/** Runs git in `cwd` and answers its stdout; stdin is `input` (or nothing). */
export function runGit(
  cwd: string,
  args: readonly string[],
  ctx: GitContext,
  input?: Buffer,
): Promise<Buffer> {
  const { options } = ctx;
  if (options.signal.aborted) return Promise.reject(interrupted(args, options));
  return new Promise((resolve, reject) => {
    const child = spawn(GIT, [...safety, ...args], {
      cwd,
      signal: requestSignal(options),
      killSignal: 'SIGKILL',
      stdio: ['pipe', 'pipe', 'pipe'],
      env: {
        PATH: '/usr/bin:/bin',
        HOME: ctx.home,
        LC_ALL: 'C',
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: '/dev/null',
        GIT_ATTR_NOSYSTEM: '1',
        GIT_TERMINAL_PROMPT: '0',
        GIT_ASKPASS: '/bin/false',
        GIT_PROTOCOL_FROM_USER: '0',
        GIT_NO_REPLACE_OBJECTS: '1',
      },
    });
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = Buffer.alloc(0);
    let overflow = false;
    child.stdout.on('data', (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > MAX_GIT_OUTPUT) {
        overflow = true;
        child.kill('SIGKILL');
      } else out.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err = Buffer.concat([err, chunk]).subarray(-STDERR_TAIL);
    });
    child.stdin.on('error', () => undefined); // a child that exits early closes its stdin
    child.stdin.end(input ?? Buffer.alloc(0));
    child.on('error', (error) => {
      reject(
        options.signal.aborted || error.name === 'AbortError'
          ? interrupted(args, options, error)
          : uncertain('git-unavailable', `git ${args[0] ?? ''} could not run`, error),
      );
    });
    child.on('close', (code) => {
      if (overflow) reject(new GitRefused(`git ${args[0] ?? ''} printed more than ${MAX_GIT_OUTPUT} bytes`));
      else if (code === 0) resolve(Buffer.concat(out));
      else if (code === null) reject(interrupted(args, options));
      else reject(new GitRefused(`git ${args[0] ?? ''} exited ${code}: ${err.toString('utf8').trim()}`));
    });
  });
}

function interrupted(args: readonly string[], options: CallOptions, cause?: unknown) {
  const why = options.signal.aborted ? 'cancelled by its caller' : 'stopped at the call deadline';
  return uncertain(
    options.signal.aborted ? 'cancelled' : 'timeout',
    `Simulated BuildTest: git ${args[0] ?? ''} was ${why}`,
    cause,
  );
}

/**
 * Prepares `repo` from a bundle: a fresh repository, every ref of the bundle fetched, `baseSha`
 * checked out detached. The seed sits in a private file beside the repository only while it is read.
 */
export async function prepareRepository(
  workDir: string,
  repo: string,
  seed: Uint8Array,
  baseSha: string,
  ctx: GitContext,
): Promise<void> {
  await rm(repo, { recursive: true, force: true });
  await mkdir(repo, { recursive: true });
  await mkdir(ctx.home, { recursive: true });
  const bundle = join(workDir, 'seed.bundle');
  await rm(bundle, { force: true });
  await writeFile(bundle, seed, { mode: 0o600, flag: 'wx' });
  try {
    await runGit(repo, ['init', '-q'], ctx);
    const heads = (await runGit(repo, ['bundle', 'list-heads', bundle], ctx)).toString('utf8');
    const refspecs = heads
      .split('\n')
      .map((line) => line.split(' ')[1])
      .filter((ref): ref is string => ref !== undefined && ref !== '')
      .map((ref) =>
        ref === 'HEAD' ? '+HEAD:refs/seed/HEAD' : `+${ref}:refs/seed/${ref.replace(/^refs\//, '')}`,
      );
    if (refspecs.length === 0) throw new GitRefused('the bundle names no refs');
    await runGit(repo, ['fetch', '--no-tags', '--no-write-fetch-head', '-q', bundle, ...refspecs], ctx);
    await runGit(repo, ['checkout', '-q', '--detach', baseSha], ctx);
    const head = (await runGit(repo, ['rev-parse', '--verify', 'HEAD^{commit}'], ctx))
      .toString('utf8')
      .trim();
    if (head !== baseSha) throw new GitRefused(`HEAD is ${head}, not the accepted base ${baseSha}`);
  } finally {
    await rm(bundle, { force: true });
  }
}

/** The baseline inventory of `baseSha`'s whole tree; a symlink or submodule in it is refused. */
export async function baselineInventory(
  repo: string,
  baseSha: string,
  ctx: GitContext,
): Promise<BaselineEntry[]> {
  const listing = await runGit(repo, ['ls-tree', '-r', '-l', '--full-tree', '-z', baseSha], ctx);
  const entries: { path: string; mode: FileMode; blobId: string; size: number }[] = [];
  for (const record of listing.toString('utf8').split('\0')) {
    if (record === '') continue;
    const tab = record.indexOf('\t');
    const [mode, type, blobId, size] = record.slice(0, tab).trim().split(/ +/);
    const path = record.slice(tab + 1);
    if (mode === '120000' || mode === '160000' || type !== 'blob') {
      throw new GitRefused(`the baseline holds a ${mode === '120000' ? 'symlink' : 'submodule'} at ${path}`);
    }
    if ((mode !== '100644' && mode !== '100755') || blobId === undefined || size === undefined) {
      throw new GitRefused(`the baseline entry ${path} has mode ${mode}`);
    }
    entries.push({ path, mode, blobId, size: Number(size) });
  }
  if (entries.length === 0) return [];
  // One batch read of every blob: `<oid> blob <size>\n<content>\n` per object, in request order.
  const batch = await runGit(
    repo,
    ['cat-file', '--batch'],
    ctx,
    Buffer.from(entries.map((e) => `${e.blobId}\n`).join(''), 'utf8'),
  );
  let offset = 0;
  return entries.map((entry) => {
    const newline = batch.indexOf(0x0a, offset);
    const header = batch.subarray(offset, newline).toString('utf8').split(' ');
    if (
      newline < 0 ||
      header[0] !== entry.blobId ||
      header[1] !== 'blob' ||
      Number(header[2]) !== entry.size
    ) {
      throw new GitRefused(`git cat-file did not answer blob ${entry.blobId} for ${entry.path}`);
    }
    const content = batch.subarray(newline + 1, newline + 1 + entry.size);
    offset = newline + 1 + entry.size + 1;
    return { ...entry, sha256: sha256Of(content) };
  });
}

// Runs `node cli/sandlot.mjs <args>` to completion as an operator would, with only PATH and the
// given variables in its environment, and answers its exit code and both streams (SIGKILL after
// `timeoutMs`, exit code null then).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from './chaos-worker.ts';

export const cliEntry = path.join(repoRoot, 'cli', 'sandlot.mjs');

export async function runCli(args: string[], env: Record<string, string>, timeoutMs = 30_000) {
  const child = spawn(process.execPath, [cliEntry, ...args], {
    cwd: repoRoot,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

// A throw-away network namespace with only loopback up (`ip netns`, iproute2; needs root), so a
// peer that tries to reach the internet (Restate's start-up version check) cannot. The namespace is
// deleted afterwards whatever happened; processes in it are the caller's to stop first.
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Calls `body` with the command prefix that runs a program inside the namespace `name`. */
export async function inNetworkNamespace<T>(
  name: string,
  body: (prefix: string[]) => Promise<T>,
): Promise<T> {
  await run('ip', ['netns', 'add', name]);
  // Should this process exit first (a signal, process.exit), the namespace still goes.
  const onExit = () => {
    try {
      execFileSync('ip', ['netns', 'delete', name], { stdio: 'ignore' });
    } catch {
      // already gone
    }
  };
  process.once('exit', onExit);
  try {
    await run('ip', ['netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up']);
    return await body(['ip', 'netns', 'exec', name]);
  } finally {
    process.removeListener('exit', onExit);
    await run('ip', ['netns', 'delete', name]);
  }
}

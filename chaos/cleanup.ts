// The last resort against leaked processes: every process a chaos run starts (Sandlot children, its
// redis-server, its PostgreSQL) registers a synchronous kill here, and `killEverything` runs them
// all. The harness calls it if its process exits with them still running, the command on SIGINT or
// SIGTERM, the smoke test after a timeout. (The children also watch their parent: see
// chaos/child-entry.js.) The normal path stops everything gracefully and never needs it.

const killers = new Map<number, () => void>();
let next = 0;
let installed = false;

export function killEverything(): void {
  for (const kill of [...killers.values()].reverse()) {
    try {
      kill();
    } catch {
      // Already gone.
    }
  }
  killers.clear();
}

/** Registers a synchronous kill; the answer unregisters it (once the resource is gone). */
export function onLeak(kill: () => void): () => void {
  if (!installed) {
    installed = true;
    process.once('exit', killEverything);
  }
  const id = next++;
  killers.set(id, kill);
  return () => {
    killers.delete(id);
  };
}

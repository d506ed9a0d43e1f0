// Durable files for the reference host's records: a write is atomic (a temporary file renamed over
// the target) and on disk before it returns (the file and then its directory are fsync'd), so a
// crash leaves the old content or the new one, never half of either.
import { mkdir, open, rename } from 'node:fs/promises';

/** fsyncs a file or a directory. */
export async function syncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes `text` to `path` in `dir` (created if absent) atomically and durably. */
export async function writeDurably(dir: string, path: string, text: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const temporary = `${path}.tmp`;
  const handle = await open(temporary, 'w');
  try {
    await handle.writeFile(text, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, path);
  await syncPath(dir);
}

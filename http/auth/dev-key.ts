// Embedded mode signs its own tokens with one HS256 key per data directory. Concurrent first starts
// must agree on that key: each writes a private temp file and hard-links it into place, and link()
// never overwrites, so exactly one candidate wins and everyone reads the winner.
import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

const KEY_FILE = 'dev-signing-key';
const KEY_BYTES = 32;
const ENCODED_KEY = /^[A-Za-z0-9_-]{43}$/; // 32 bytes in unpadded base64url

export async function loadOrCreateDevKey(dataDir: string): Promise<Uint8Array> {
  const file = path.join(dataDir, KEY_FILE);
  const existing = await readKey(file);
  if (existing) return existing;

  await mkdir(dataDir, { recursive: true });
  const temp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(temp, `${randomBytes(KEY_BYTES).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    await link(temp, file);
  } catch (err) {
    if (!isErrno(err, 'EEXIST')) throw err;
  } finally {
    await rm(temp, { force: true });
  }

  const key = await readKey(file);
  if (!key) throw new Error(`dev signing key ${file} vanished right after it was created`);
  return key;
}

async function readKey(file: string): Promise<Uint8Array | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return undefined;
    throw err;
  }
  const encoded = text.trim();
  // The message names the file but never echoes its contents: even a damaged key is a secret.
  if (!ENCODED_KEY.test(encoded)) {
    throw new Error(
      `dev signing key ${file} is corrupt (expected ${KEY_BYTES} bytes as base64url); ` +
        'delete it to generate a new key, which invalidates tokens signed with the old one',
    );
  }
  return new Uint8Array(Buffer.from(encoded, 'base64url'));
}

function isErrno(err: unknown, code: string): boolean {
  return err instanceof Error && (err as NodeJS.ErrnoException).code === code;
}

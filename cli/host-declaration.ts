// The reference host's declaration (`sandlot host run --config FILE`): a strict JSON document that
// names the host, its directories, the control listener, the files its certificate, keys and
// verification trust are read from, and its declared guest (when a sandbox reports `configured`). Invariants: unknown members are refused and every problem names
// its field path; a file that cannot be read or parsed names the field that points at it, never
// what the file holds; keys are read into KeyObjects and never echoed.
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { resolve, dirname } from 'node:path';
import { z } from 'zod';
import { guestModes } from '../providers/sandbox-host/host-guest.ts';
import type { HostSigner } from '../providers/sandbox-host/host-result.ts';
import { isCanonicalInstant, isEd25519Key } from '../providers/sandbox-host/signing.ts';
import {
  createTrust,
  type VerificationKey,
  type VerificationTrust,
} from '../providers/sandbox-host/trust.ts';

const MAX_DECLARATION_BYTES = 64 * 1024;
const MAX_MATERIAL_BYTES = 1024 * 1024;

const path = z.string().min(1, 'expected a file path').max(4096);
const positiveInt = z.number().int('expected an integer').positive('expected a positive integer');
const instant = z
  .string()
  .refine(isCanonicalInstant, 'expected a canonical ISO instant such as 2026-01-01T00:00:00.000Z');

const trustKey = z.strictObject({
  publicKeyFile: path,
  version: positiveInt,
  notBefore: instant,
  notAfter: instant,
});

export const hostDeclarationSchema = z.strictObject({
  hostId: z.string().min(1).max(256),
  journalDir: path,
  sandboxesDir: path,
  control: z.strictObject({
    /** `https://<dns name>:<port>`: the name the listener's certificate carries. */
    url: z.string().url('expected an https://<name>:<port> URL'),
    /** Connect to this IP instead of resolving the URL's name; TLS still checks the name. */
    address: z.string().min(1).optional(),
    /** Connect from this local IP (a host bound to its own address) instead of the default. */
    localAddress: z.string().min(1).optional(),
    caFile: path,
  }),
  clientCertFile: path,
  clientKeyFile: path,
  resultKey: z.strictObject({ file: path, version: positiveInt }),
  trust: z.strictObject({
    current: trustKey,
    next: trustKey.optional(),
    revocationEpoch: positiveInt,
  }),
  /**
   * The sandboxes' declared guest (providers/sandbox-host/host-guest.ts): `on-report` (absent: the
   * default) waits for the guest's own report; `at-start` reports configured once recorded.
   */
  guest: z.strictObject({ configured: z.enum(guestModes) }).optional(),
  pollIntervalMs: positiveInt.max(3_600_000),
  retry: z
    .strictObject({
      attempts: positiveInt.max(1000),
      initialBackoffMs: positiveInt.max(3_600_000),
      maxBackoffMs: positiveInt.max(3_600_000),
    })
    .optional(),
});
export type HostDeclaration = z.infer<typeof hostDeclarationSchema>;

/** The declaration or one of its files is unusable; the message names each field at fault. */
export class HostDeclarationError extends Error {
  override readonly name = 'HostDeclarationError';
  constructor(
    readonly file: string,
    readonly problems: readonly string[],
  ) {
    super([`invalid host declaration ${file}:`, ...problems.map((p) => `  - ${p}`)].join('\n'));
  }
}

const errnoOf = (error: unknown): string => (error as NodeJS.ErrnoException).code ?? 'error';

/** Reads and validates the declaration; relative paths in it are resolved against its directory. */
export async function loadHostDeclaration(file: string): Promise<HostDeclaration> {
  let text: string;
  try {
    const bytes = await readFile(file);
    if (bytes.length > MAX_DECLARATION_BYTES) {
      throw new HostDeclarationError(file, [`the file exceeds ${MAX_DECLARATION_BYTES} bytes`]);
    }
    text = bytes.toString('utf8');
  } catch (error) {
    if (error instanceof HostDeclarationError) throw error;
    throw new HostDeclarationError(file, [`cannot read the file (${errnoOf(error)})`]);
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw new HostDeclarationError(file, ['the file is not valid JSON']);
  }
  const parsed = hostDeclarationSchema.safeParse(document);
  if (!parsed.success) {
    throw new HostDeclarationError(
      file,
      parsed.error.issues.map((issue) => {
        const at = issue.path.map(String).join('.') || '(document)';
        if (issue.code === 'unrecognized_keys') {
          return `${at === '(document)' ? '' : `${at}: `}unknown field(s) ${issue.keys.join(', ')}`;
        }
        return `${at}: ${issue.message}`;
      }),
    );
  }
  const base = dirname(resolve(file));
  const at = (p: string) => resolve(base, p);
  const d = parsed.data;
  const key = (k: z.infer<typeof trustKey>) => ({ ...k, publicKeyFile: at(k.publicKeyFile) });
  return {
    ...d,
    journalDir: at(d.journalDir),
    sandboxesDir: at(d.sandboxesDir),
    control: { ...d.control, caFile: at(d.control.caFile) },
    clientCertFile: at(d.clientCertFile),
    clientKeyFile: at(d.clientKeyFile),
    resultKey: { ...d.resultKey, file: at(d.resultKey.file) },
    trust: {
      ...d.trust,
      current: key(d.trust.current),
      ...(d.trust.next === undefined ? {} : { next: key(d.trust.next) }),
    },
  };
}

/** What the declaration's files hold, checked: PEM text for TLS, KeyObjects for signing. */
export interface HostMaterials {
  caPem: string;
  certPem: string;
  keyPem: string;
  signer: HostSigner;
  trust: VerificationTrust;
}

/** Reads every file the declaration names; one HostDeclarationError lists each unusable one. */
export async function loadHostMaterials(file: string, d: HostDeclaration): Promise<HostMaterials> {
  const problems: string[] = [];
  const read = async (field: string, p: string): Promise<string | undefined> => {
    try {
      const bytes = await readFile(p);
      if (bytes.length > MAX_MATERIAL_BYTES) {
        problems.push(`${field}: the file exceeds ${MAX_MATERIAL_BYTES} bytes`);
        return undefined;
      }
      return bytes.toString('utf8');
    } catch (error) {
      problems.push(`${field}: cannot read the file (${errnoOf(error)})`);
      return undefined;
    }
  };
  const pem = async (field: string, p: string, label: string): Promise<string | undefined> => {
    const text = await read(field, p);
    if (text !== undefined && !text.includes(`-----BEGIN ${label}-----`)) {
      problems.push(`${field}: expected a PEM ${label.toLowerCase()}`);
      return undefined;
    }
    return text;
  };
  const caPem = await pem('control.caFile', d.control.caFile, 'CERTIFICATE');
  const certPem = await pem('clientCertFile', d.clientCertFile, 'CERTIFICATE');
  const keyPem = await read('clientKeyFile', d.clientKeyFile);
  if (keyPem !== undefined) {
    try {
      createPrivateKey(keyPem);
    } catch {
      problems.push('clientKeyFile: expected a PEM private key');
    }
  }
  const resultPem = await read('resultKey.file', d.resultKey.file);
  let privateKey: KeyObject | undefined;
  if (resultPem !== undefined) {
    try {
      privateKey = createPrivateKey(resultPem);
    } catch {
      privateKey = undefined;
    }
    if (privateKey === undefined || !isEd25519Key(privateKey, 'private')) {
      privateKey = undefined;
      problems.push('resultKey.file: expected an Ed25519 private key (PKCS#8 PEM)');
    }
  }
  const verificationKey = async (
    field: string,
    k: HostDeclaration['trust']['current'],
  ): Promise<VerificationKey | undefined> => {
    const text = await read(`${field}.publicKeyFile`, k.publicKeyFile);
    if (text === undefined) return undefined;
    try {
      const publicKey = createPublicKey(text);
      if (!isEd25519Key(publicKey, 'public')) throw new Error('not Ed25519');
      return { version: k.version, publicKey, notBefore: k.notBefore, notAfter: k.notAfter };
    } catch {
      problems.push(`${field}.publicKeyFile: expected an Ed25519 public key (SPKI PEM)`);
      return undefined;
    }
  };
  const current = await verificationKey('trust.current', d.trust.current);
  const next = d.trust.next === undefined ? null : await verificationKey('trust.next', d.trust.next);
  let trust: VerificationTrust | undefined;
  if (current !== undefined && next !== undefined) {
    try {
      trust = createTrust({ current, next, revocationEpoch: d.trust.revocationEpoch });
    } catch (error) {
      problems.push(`trust: ${(error as Error).message}`);
    }
  }
  if (
    problems.length > 0 ||
    caPem === undefined ||
    certPem === undefined ||
    keyPem === undefined ||
    privateKey === undefined ||
    trust === undefined
  ) {
    throw new HostDeclarationError(file, problems);
  }
  return {
    caPem,
    certPem,
    keyPem,
    signer: { hostId: d.hostId, version: d.resultKey.version, privateKey },
    trust,
  };
}

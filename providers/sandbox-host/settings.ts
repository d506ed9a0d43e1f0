// The sandbox-host provider's settings (SANDLOT_PROVIDER=sandbox-host), read from the environment
// and their files at start-up, every problem named by its variable in one error. Invariants: a
// problem says what is wrong with a variable, never what it contains (no PEM, no key bytes, no
// file contents); the listener's key must belong to its certificate, the certificate must allow
// serverAuth, and the envelope-signing key must be an Ed25519 PKCS#8 private key with a version.
import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isEd25519Key } from './signing.ts';

export const SANDBOX_HOST_VARIABLES = {
  listen: 'SANDLOT_HOST_CONTROL_LISTEN',
  certFile: 'SANDLOT_HOST_CONTROL_CERT_FILE',
  keyFile: 'SANDLOT_HOST_CONTROL_KEY_FILE',
  clientCaFile: 'SANDLOT_HOST_CLIENT_CA_FILE',
  signingKeyFile: 'SANDLOT_HOST_SIGNING_KEY_FILE',
  signingKeyVersion: 'SANDLOT_HOST_SIGNING_KEY_VERSION',
} as const;

export const DEFAULT_HOST_CONTROL_LISTEN = '127.0.0.1:7443';

const SERVER_AUTH_OID = '1.3.6.1.5.5.7.3.1';
const MAX_FILE_BYTES = 1024 * 1024;

export interface SandboxHostSettings {
  /** Where the private control listener binds (port 0: any free port, for tests). */
  listen: { host: string; port: number };
  /** The listener's serverAuth certificate chain and its private key (PEM). */
  certPem: string;
  keyPem: string;
  /** The CA that issues hosts' client certificates (PEM). */
  clientCaPem: string;
  /** The control plane's envelope-signing key (Ed25519) and its trust version. */
  signer: { version: number; privateKey: KeyObject };
}

export interface SandboxHostSettingsProblem {
  variable: string;
  reason: string;
}

/** The sandbox-host settings are missing or invalid; names every variable at fault. */
export class SandboxHostSettingsError extends Error {
  override readonly name = 'SandboxHostSettingsError';
  constructor(readonly problems: readonly SandboxHostSettingsProblem[]) {
    super(
      ['Invalid sandbox-host settings:', ...problems.map((p) => `  - ${p.variable}: ${p.reason}`)].join('\n'),
    );
  }
}

export type ReadFile = (path: string) => Buffer;

/** `host:port`, `[v6]:port`; the port 0-65535. */
export function parseListen(value: string): { host: string; port: number } | string {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(value);
  const port = match === null ? Number.NaN : Number(match[2]);
  if (match?.[1] === undefined || !(port >= 0 && port <= 65535)) {
    return 'expected host:port (IPv6 in brackets), port 0-65535';
  }
  return { host: match[1].replace(/^\[|\]$/g, ''), port };
}

function certificatesIn(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((block) => new X509Certificate(block));
}

/** Reads and validates every setting; throws one SandboxHostSettingsError naming each bad variable. */
export function loadSandboxHostSettings(
  env: Readonly<Record<string, string | undefined>>,
  read: ReadFile = (path) => readFileSync(path),
): SandboxHostSettings {
  const problems: SandboxHostSettingsProblem[] = [];
  const V = SANDBOX_HOST_VARIABLES;
  const value = (name: string): string | undefined => {
    const raw = env[name]?.trim();
    return raw === undefined || raw === '' ? undefined : raw;
  };
  const file = (name: string): string | undefined => {
    const path = value(name);
    if (path === undefined) {
      problems.push({ variable: name, reason: 'required with SANDLOT_PROVIDER=sandbox-host (a file path)' });
      return undefined;
    }
    try {
      const bytes = read(path);
      if (bytes.length > MAX_FILE_BYTES) {
        problems.push({ variable: name, reason: `the file exceeds ${MAX_FILE_BYTES} bytes` });
        return undefined;
      }
      return bytes.toString('utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'error';
      problems.push({ variable: name, reason: `cannot read the file (${code})` });
      return undefined;
    }
  };

  const listen = parseListen(value(V.listen) ?? DEFAULT_HOST_CONTROL_LISTEN);
  if (typeof listen === 'string') problems.push({ variable: V.listen, reason: listen });

  const certPem = file(V.certFile);
  let leaf: X509Certificate | undefined;
  if (certPem !== undefined) {
    try {
      leaf = certificatesIn(certPem)[0];
    } catch {
      leaf = undefined;
    }
    if (leaf === undefined) {
      problems.push({ variable: V.certFile, reason: 'expected a PEM certificate' });
    } else if (leaf.keyUsage !== undefined && !leaf.keyUsage.includes(SERVER_AUTH_OID)) {
      problems.push({ variable: V.certFile, reason: 'the certificate does not allow serverAuth' });
    }
  }

  const keyPem = file(V.keyFile);
  if (keyPem !== undefined) {
    let key: KeyObject | undefined;
    try {
      key = createPrivateKey(keyPem);
    } catch {
      problems.push({ variable: V.keyFile, reason: 'expected a PEM private key' });
    }
    if (key !== undefined && leaf !== undefined && !leaf.checkPrivateKey(key)) {
      problems.push({ variable: V.keyFile, reason: `the key does not belong to ${V.certFile}` });
    }
  }

  const clientCaPem = file(V.clientCaFile);
  if (clientCaPem !== undefined) {
    let count = 0;
    try {
      count = certificatesIn(clientCaPem).length;
    } catch {
      count = 0;
    }
    if (count === 0) problems.push({ variable: V.clientCaFile, reason: 'expected PEM CA certificate(s)' });
  }

  const signingPem = file(V.signingKeyFile);
  let privateKey: KeyObject | undefined;
  if (signingPem !== undefined) {
    try {
      if (!signingPem.includes('-----BEGIN PRIVATE KEY-----')) throw new Error('not PKCS#8');
      privateKey = createPrivateKey(signingPem);
    } catch {
      privateKey = undefined;
    }
    if (privateKey === undefined || !isEd25519Key(privateKey, 'private')) {
      privateKey = undefined;
      problems.push({ variable: V.signingKeyFile, reason: 'expected an Ed25519 private key (PKCS#8 PEM)' });
    }
  }

  const versionText = value(V.signingKeyVersion);
  const version = versionText !== undefined && /^[1-9]\d{0,8}$/.test(versionText) ? Number(versionText) : 0;
  if (version === 0) {
    problems.push({
      variable: V.signingKeyVersion,
      reason:
        versionText === undefined
          ? 'required with SANDLOT_PROVIDER=sandbox-host (a positive integer)'
          : 'expected a positive integer',
    });
  }

  if (
    problems.length > 0 ||
    typeof listen === 'string' ||
    certPem === undefined ||
    keyPem === undefined ||
    clientCaPem === undefined ||
    privateKey === undefined
  ) {
    throw new SandboxHostSettingsError(problems);
  }
  return { listen, certPem, keyPem, clientCaPem, signer: { version, privateKey } };
}

// The AcceptedBuildTestProfile (SANDLOT_BUILDTEST_PROFILE_FILE), read once at start: what a BuildTest
// command may run and how. It pins the executable allow list, the command and collector images by
// digest, resource limits, offline egress and the trusted collector command. There is no default:
// unset, the BuildTest capability is not advertised (its routes answer 409 build-test-unavailable);
// set but invalid, start-up fails naming each bad field's path, never a value. A lease keeps the
// profile (and hash) it accepted; a changed file takes a restart and affects new leases only.
// Enumerations are strings ("v2", "deny-all"), as Sandbox provisioning persists them.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { canonicalJson, sha256Hex } from '../lib/canonical-json.ts';
import { credentialPaths } from './agenthost.ts';

const MAX_FILE_BYTES = 256 * 1024;

/** The collector mode AgentHost routes before any web configuration or SDK start. */
export const COLLECTOR_MODE_FLAG = '--build-test-output-collector-v1';

const absolutePath = z
  .string()
  .max(4096)
  .regex(/^\/[\x21-\x7e]*$/, 'expected an absolute path of printable ASCII without spaces')
  .refine(
    (p) =>
      !p
        .split('/')
        .slice(1)
        .some((s) => s === '' || s === '.' || s === '..'),
    {
      error: 'expected a normalized absolute path (no "//", "." or ".." segments, no trailing "/")',
    },
  );

/** `registry[:port]/path@sha256:<64 hex>`: a digest pins the image; a tag would not. */
const pinnedImage = z
  .string()
  .max(512)
  .regex(
    /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?(\/[a-z0-9]+([._-][a-z0-9]+)*)+@sha256:[0-9a-f]{64}$/,
    'expected an image pinned by digest: registry/path@sha256:<64 lower-case hex> (no tag)',
  );

const cpu = z
  .string()
  .regex(/^([1-9][0-9]{0,2}|[1-9][0-9]{0,5}m)$/, 'expected a CPU quantity such as "2" or "500m"');
const bytesQuantity = z
  .string()
  .regex(/^[1-9][0-9]{0,5}(Ki|Mi|Gi|Ti)$/, 'expected a binary quantity such as "512Mi" or "4Gi"');
const containerLimits = z.strictObject({ cpu, memory: bytesQuantity, ephemeralStorage: bytesQuantity });

const profileSchema = z.strictObject({
  /** The executables an accepted command may name; nothing else runs. */
  executables: z
    .array(absolutePath)
    .min(1, 'expected at least one executable')
    .max(64)
    .refine((list) => new Set(list).size === list.length, { error: 'executables repeat a path' }),
  /** The command versions this profile supports; version 2 needs the collector mode. */
  versions: z
    .array(z.enum(['v1', 'v2'], { error: 'expected "v1" or "v2"' }))
    .min(1, 'expected at least one version')
    .refine((list) => new Set(list).size === list.length, { error: 'versions repeat' }),
  images: z.strictObject({ command: pinnedImage, collector: pinnedImage }),
  resources: z.strictObject({
    command: containerLimits,
    collector: containerLimits,
    commandTimeoutSeconds: z.number().int().min(1).max(86_400),
    collectorTimeoutSeconds: z.number().int().min(1).max(3_600),
    /** Bounded command output kept as logs (never file evidence). */
    maxLogBytes: z
      .number()
      .int()
      .min(1)
      .max(16 * 1024 * 1024),
  }),
  /** BuildTest Pods run offline under an operation/role-scoped deny-all policy; nothing else is accepted. */
  egress: z.literal('deny-all', { error: 'BuildTest Pods are offline: expected "deny-all"' }),
  collector: z.strictObject({
    executable: absolutePath,
    args: z
      .array(
        z
          .string()
          .max(256)
          .regex(/^[\x21-\x7e]+$/, 'expected printable ASCII without spaces'),
      )
      .max(16)
      .refine((args) => args[0] === COLLECTOR_MODE_FLAG, { error: `expected ${COLLECTOR_MODE_FLAG} first` }),
  }),
});

export type AcceptedBuildTestProfile = Readonly<z.infer<typeof profileSchema>>;

export interface LoadedBuildTestProfile {
  profile: AcceptedBuildTestProfile;
  /** SHA-256 of the profile's canonical JSON: what a lease records as the profile it accepted. */
  hash: string;
}

type Issues = { issues: z.core.$ZodRawIssue[] };

function fail(ctx: Issues, input: string, message: string): typeof z.NEVER {
  ctx.issues.push({ code: 'custom', input, message });
  return z.NEVER;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}

/** Checks a profile document; issues name each bad field's path. */
export function checkProfile(
  document: unknown,
): { profile: AcceptedBuildTestProfile } | { problems: string[] } {
  const leaks = credentialPaths(document).map(
    (path) => `${path.join('.')}: looks like a credential; a BuildTest profile carries none`,
  );
  const parsed = profileSchema.safeParse(document);
  const problems = [
    ...leaks,
    ...(parsed.success
      ? []
      : parsed.error.issues.map(
          (issue) => `${issue.path.map(String).join('.') || '(file)'}: ${issue.message}`,
        )),
  ];
  if (!parsed.success || problems.length > 0) return { problems };
  return { profile: deepFreeze(parsed.data) };
}

/** The env variable's schema: a path, read and validated now. */
export const buildTestProfileFile = z.string().transform((path, ctx): LoadedBuildTestProfile => {
  let text: string;
  try {
    const bytes = readFileSync(path);
    if (bytes.length > MAX_FILE_BYTES) return fail(ctx, path, `the file exceeds ${MAX_FILE_BYTES} bytes`);
    text = bytes.toString('utf8');
  } catch (error) {
    return fail(ctx, path, `cannot read the file (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    return fail(ctx, path, 'the file is not valid JSON');
  }
  const checked = checkProfile(document);
  if ('problems' in checked) {
    for (const problem of checked.problems) fail(ctx, path, problem);
    return z.NEVER;
  }
  return { profile: checked.profile, hash: sha256Hex(canonicalJson(checked.profile)) };
});

/** Whether BuildTest is offered at all: only with a configured profile (else 409 build-test-unavailable). */
export function buildTestAvailable(config: { buildTestProfile?: LoadedBuildTestProfile }): boolean {
  return config.buildTestProfile !== undefined;
}

/**
 * Whether the configured provider's workers run BuildTest's command and collector Pods: the
 * simulated provider's and Agent Sandbox's. Start-up requires SANDLOT_CORE_TOKEN_FILE in production
 * exactly when this holds, and cli/compose.ts offers a runner exactly then, so the two cannot
 * disagree.
 */
export function buildTestRunnerOffered(providerId: string): boolean {
  return providerId === 'simulated' || providerId === 'agent-sandbox';
}

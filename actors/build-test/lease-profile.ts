// The AcceptedBuildTestProfile a lease keeps (docs/build-test.md#configuration). Provisioning records
// the profile in effect with the lease row (sandbox_leases.build_test_profile, migration 0015), and
// everything BuildTest does on that lease uses that record, never the process's current profile: a
// changed profile file affects new leases only. Its hash is not stored; it follows from the document
// exactly as config/build-test-profile.ts computes it (SHA-256 of the canonical JSON).
//
// The profile's rules (pinned images, normalized paths, limits, no credentials) were checked by
// config/build-test-profile.ts before it could be recorded. actors/ may not import config/
// (npm run lint:layers), so here the recorded row is checked for shape only: parsed, never cast.
import { z } from 'zod';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import type { BuildTestProfileSnapshot } from '../../providers/build-test.ts';
import { BuildTestRefusedError } from './errors.ts';

/** The AcceptedBuildTestProfile as BuildTest uses it: what runs, and what a command may name. */
export interface BuildTestProfileRef extends BuildTestProfileSnapshot {
  readonly executables: readonly string[];
  readonly versions: readonly ('v1' | 'v2')[];
}

const limits = z.strictObject({ cpu: z.string(), memory: z.string(), ephemeralStorage: z.string() });

const recordedProfileSchema = z.strictObject({
  executables: z.array(z.string()).min(1),
  versions: z.array(z.enum(['v1', 'v2'])).min(1),
  images: z.strictObject({ command: z.string(), collector: z.string() }),
  resources: z.strictObject({
    command: limits,
    collector: limits,
    commandTimeoutSeconds: z.number().int().positive(),
    collectorTimeoutSeconds: z.number().int().positive(),
    maxLogBytes: z.number().int().positive(),
  }),
  egress: z.literal('deny-all'),
  collector: z.strictObject({ executable: z.string(), args: z.array(z.string()) }),
});

/** What a lease records of a profile: the document, without its hash; null without a profile. */
export function profileRecordOf(profile: BuildTestProfileRef | undefined): Record<string, unknown> | null {
  if (profile === undefined) return null;
  const { executables, versions, images, resources, egress, collector } = profile;
  // Exactly the profile's fields, so the recorded document hashes as the loaded profile did.
  return { executables, versions, images, resources, egress, collector };
}

/**
 * The profile a lease recorded, with its hash; null when it recorded none. A record that is not a
 * profile's shape (a hand-edited row) is refused rather than used.
 */
export function leaseProfileOf(lease: {
  buildTestProfile: Record<string, unknown> | null;
}): BuildTestProfileRef | null {
  if (lease.buildTestProfile === null) return null;
  const parsed = recordedProfileSchema.safeParse(lease.buildTestProfile);
  if (!parsed.success) {
    throw new BuildTestRefusedError(
      'build-test-lease-profile-invalid',
      "the lease's recorded AcceptedBuildTestProfile is not a profile",
      { status: 500, title: 'Lease profile invalid' },
    );
  }
  return { ...parsed.data, hash: sha256Hex(canonicalJson(parsed.data)) };
}

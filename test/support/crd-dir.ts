// Where the tests find the upstream Agent Sandbox CRD schemas. They are never copied into the repo:
// SANDLOT_CRD_DIR names the folder holding the CRD YAMLs (a relative path is taken from the
// repository root), default ../shared/reference/agent-sandbox-crds beside the repository. Without
// them, the test files that need them skip those tests (test/support/crd-notice.ts says which),
// unless SANDLOT_REQUIRE_CRDS=1 (CI), where a missing folder fails the run instead.
//
// A test file that needs the schemas imports `skipWithoutCrds` from here and guards its suites with
// `describe.skipIf(skipWithoutCrds)`; importing this module is what marks it as needing them.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CRD_DIR_SETTING = 'SANDLOT_CRD_DIR';
export const REQUIRE_CRDS_SETTING = 'SANDLOT_REQUIRE_CRDS';
export const DEFAULT_CRD_DIR = '../shared/reference/agent-sandbox-crds';

/** The CRD files the fake Kubernetes API and the builder tests read. */
export const CRD_FILES = [
  'agents.x-k8s.io_sandboxes.yaml',
  'extensions.agents.x-k8s.io_sandboxtemplates.yaml',
  'extensions.agents.x-k8s.io_sandboxclaims.yaml',
  'extensions.agents.x-k8s.io_sandboxwarmpools.yaml',
] as const;

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** The resolved CRD folder, absolute. */
export const crdDir = resolve(repoRoot, process.env[CRD_DIR_SETTING] || DEFAULT_CRD_DIR);

/** True when every CRD file is in the folder. */
export const crdsPresent = CRD_FILES.every((file) => existsSync(resolve(crdDir, file)));

/** True when the run must not skip the CRD tests (CI): a missing folder then fails them. */
export const crdsRequired = process.env[REQUIRE_CRDS_SETTING] === '1';

/** Guard for the suites that need the schemas: skip them only when absent and not required. */
export const skipWithoutCrds = !crdsPresent && !crdsRequired;

/** Absolute path of one CRD file; throws a message naming the setting when the folder lacks it. */
export function crdPath(file: string): string {
  const path = resolve(crdDir, file);
  if (!existsSync(path)) {
    throw new Error(
      `Agent Sandbox CRD schema ${file} not found in ${crdDir}; set ${CRD_DIR_SETTING} to a folder ` +
        'holding the Agent Sandbox CRD YAMLs',
    );
  }
  return path;
}

// Vitest global setup (root config, so once per run): when the Agent Sandbox CRD schemas are absent,
// says on one line at the end of the run which test files skipped their CRD tests, why, and how to
// run them; with SANDLOT_REQUIRE_CRDS=1 (CI) it fails the run before any test instead.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import type { TestProject } from 'vitest/node';
import {
  CRD_DIR_SETTING,
  REQUIRE_CRDS_SETTING,
  crdDir,
  crdsPresent,
  crdsRequired,
  repoRoot,
} from './crd-dir.ts';

/** A test file needs the schemas when it imports test/support/crd-dir.ts (see that file). */
const needsCrds = (file: string): boolean => /support\/crd-dir\.ts['"]/.test(readFileSync(file, 'utf8'));

export default function setup(project: TestProject): (() => void) | undefined {
  if (crdsPresent) return undefined;
  if (crdsRequired) {
    throw new Error(
      `${REQUIRE_CRDS_SETTING}=1 but there are no Agent Sandbox CRD schemas at ${crdDir}: set ` +
        `${CRD_DIR_SETTING} to a folder holding the Agent Sandbox CRD YAMLs`,
    );
  }
  return () => {
    const skipped = project.vitest.state
      .getTestModules()
      .map((module) => module.moduleId)
      .filter(needsCrds)
      .map((file) => relative(repoRoot, file))
      .sort();
    if (skipped.length === 0) return;
    console.warn(
      `NOT RUN: the Agent Sandbox CRD tests in ${skipped.length} test file(s) (${skipped.join(', ')}), ` +
        `because there are no CRD schemas at ${crdDir}; to run them, set ${CRD_DIR_SETTING} to a ` +
        'folder holding the Agent Sandbox CRD YAMLs.',
    );
  };
}

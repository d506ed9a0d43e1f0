// The provider contract: one suite, run against every SandboxProvider (hono's runTest pattern).
// A provider that passes it can back a lease; the cases name what the lease machinery relies on.
import { afterAll, beforeAll, describe } from 'vitest';
import { cleanupCases } from './cleanup-cases.ts';
import type { ContractSubject } from './contract-subject.ts';
import { failureCases } from './failure-cases.ts';
import { lifecycleCases } from './lifecycle-cases.ts';

export type { ContractSubject } from './contract-subject.ts';

/**
 * Registers the contract for one provider; `setup` runs once, cases isolate themselves by owner.
 * `skip`: report the whole contract as skipped (a subject that cannot be built on this machine).
 */
export function defineProviderContract(
  name: string,
  setup: () => Promise<ContractSubject>,
  options: { skip?: boolean } = {},
): void {
  describe.skipIf(options.skip === true)(`provider contract: ${name}`, () => {
    let subject: ContractSubject | undefined;
    const current = (): ContractSubject => {
      if (subject === undefined) throw new Error(`contract subject ${name} was not set up`);
      return subject;
    };

    beforeAll(async () => {
      subject = await setup();
    });
    afterAll(async () => {
      await subject?.close();
    });

    lifecycleCases(current);
    cleanupCases(current);
    failureCases(current);
  });
}

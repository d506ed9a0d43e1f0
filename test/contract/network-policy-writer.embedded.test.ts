// The NetworkPolicyWriter contract against the embedded owner: the network_policies table, on both
// database backends. Rules are accepted with putNetworkPolicy (what the admin route
// PUT …/network-policies/{generation} calls) and judged by TableNetworkPolicies; an outage is a
// pool on a loopback port nothing listens on.
import { TableNetworkPolicyWriter } from '../../actors/sandbox/network-policy-writer-embedded.ts';
import type { NetworkPolicyWriter } from '../../actors/sandbox/network-policy-writer.ts';
import type { Database } from '../../store/db.ts';
import { migrate } from '../../store/migrate.ts';
import { putNetworkPolicy, readNetworkPolicy, TableNetworkPolicies } from '../../store/network-policies.ts';
import { createPgDatabase } from '../../store/pg-database.ts';
import { backends, openBackend } from '../support/databases.ts';
import { defineNetworkPolicyWriterContract } from './network-policy-writer-cases.ts';

for (const backend of backends) {
  defineNetworkPolicyWriterContract(`embedded table (${backend})`, async () => {
    const handle = await openBackend(backend);
    const { db } = handle;
    await migrate(db);
    const verifier = new TableNetworkPolicies(db);
    const writer: NetworkPolicyWriter = new TableNetworkPolicyWriter(db);
    let unreachable: Database | undefined;
    return {
      writer,
      verify: (project, generation) => verifier.verify(project.tenantId, project.projectId, generation),
      accept: async (project, generation, rules) => {
        const result = await putNetworkPolicy(db, { ...project, generation, policy: rules });
        if (result !== 'created') throw new Error(`generation ${generation} was not accepted: ${result}`);
      },
      rulesOf: async (project, generation) =>
        (await readNetworkPolicy(db, project.tenantId, project.projectId, generation))?.policy ?? null,
      unavailable: () => {
        unreachable ??= createPgDatabase({
          connectionString: 'postgres://postgres@127.0.0.1:1/test',
          max: 1,
        });
        return Promise.resolve(new TableNetworkPolicyWriter(unreachable));
      },
      close: async () => {
        await unreachable?.close();
        await handle.close();
      },
    };
  });
}

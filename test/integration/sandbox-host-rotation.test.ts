// Certificate rotation and revocation as a host lives through them, end to end on the sandbox-host
// provider: the control listener authenticates through the PostgreSQL directory, so a Next
// generation authenticates as soon as it is registered, promotion keeps the old one working until
// it is revoked, and a host presenting the revoked generation gets nothing done: its work is
// uncertain (never absent) until it comes back with a current certificate.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyProviderFailure } from '../../providers/errors.ts';
import {
  addNextCertificate,
  listCertificates,
  promoteNext,
  revokeGeneration,
} from '../../providers/sandbox-host/certificate-rotation.ts';
import { retireHost } from '../../providers/sandbox-host/enrollment.ts';
import type { ProviderResource } from '../../providers/provider.ts';
import {
  budget,
  failureOf,
  newOwner,
  ownedBy,
  presentResource,
  provisionRequest,
  refTo,
} from '../contract/contract-subject.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { type HostFleet, startHostFleet } from '../support/sandbox-host-fleet.ts';

describe('sandbox-host certificate rotation and revocation', () => {
  let pg: IsolatedPostgres;
  let fleet: HostFleet;
  let resource: ProviderResource;

  beforeAll(async () => {
    pg = await isolatedPostgres();
    fleet = await startHostFleet({ db: pg.open(), hosts: 1, prefix: 'rotating' });
    resource = await fleet.provider.provision(provisionRequest(fleet, newOwner()), budget());
  }, 60_000);
  afterAll(async () => {
    await fleet.close();
    await pg.drop();
  });

  const host = () => fleet.hosts[0]!;
  const describeIt = () => fleet.provider.describe(refTo(fleet, resource), budget());

  it('keeps a host working through an overlapping rotation, then refuses the revoked generation', async () => {
    const first = await host().issueCertificate();
    const second = await host().issueCertificate();
    // Generation 1 is the enrolled one; the fleet host presents it. Register generation 2 as Next.
    expect(await addNextCertificate(fleet.db, host().hostId, second.certPem)).toEqual({ generation: 2 });
    expect(presentResource(await describeIt()).resourceId).toBe(resource.resourceId);

    // The host switches to the Next generation before promotion: it authenticates already.
    host().presentCertificate(second);
    expect(presentResource(await describeIt()).resourceId).toBe(resource.resourceId);
    await promoteNext(fleet.db, host().hostId);
    const states = (await listCertificates(fleet.db, host().hostId)).map((c) => [c.generation, c.state]);
    expect(states).toEqual([
      [1, 'Previous'],
      [2, 'Current'],
    ]);

    // A certificate never registered is refused; so is generation 1 once revoked.
    expect(await revokeGeneration(fleet.db, host().hostId, 1)).toEqual({ revoked: true });
    for (const refused of [first, host().enrolledCertificate]) {
      host().presentCertificate(refused);
      await host().stop();
      await host().start();
      const error = await failureOf(fleet.provider.describe(refTo(fleet, resource), budget(1_500)));
      expect(classifyProviderFailure(error)).toBe('uncertain');
      // The listener refused the host itself: 403, before any handler ran.
      expect(host().loopError).toMatchObject({ problem: { status: 403, type: 'host-forbidden' } });
    }

    // Back on the current generation, the same resource answers present: nothing was lost.
    host().presentCertificate(second);
    await host().stop();
    await host().start();
    expect(presentResource(await describeIt()).owner).toEqual(resource.owner);
  });

  it('a retired host is never asked again, and a listing that cannot ask it is uncertain, never short', async () => {
    expect(await retireHost(fleet.db, host().hostId)).toEqual({ retired: true });
    expect(await retireHost(fleet.db, host().hostId)).toEqual({ retired: false });
    const listed = await failureOf(fleet.provider.listOwned(ownedBy(fleet, resource.owner), budget()));
    expect(classifyProviderFailure(listed)).toBe('uncertain');
    expect(listed).toMatchObject({ code: 'host-retired' });
    const described = await failureOf(fleet.provider.describe(refTo(fleet, resource), budget(1_500)));
    expect(classifyProviderFailure(described)).toBe('uncertain');
    // Its record is still on the host: nothing was reported absent.
    expect(await host().recordedExpiry(resource.owner)).not.toBeUndefined();
  });
});

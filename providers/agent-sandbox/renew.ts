// Renew: move the exact claim's backstop `spec.lifecycle.shutdownTime` to the new expiry plus the
// snapshot's grace. The claim is read by name, checked ours (labels, annotations, UID) like describe
// and release do, and patched with its UID and resourceVersion as preconditions, so a replaced or
// relabelled claim is never touched; a claim changed in between is read and checked again. A
// repeat with the same expiry finds the time already set and writes nothing.
import { definitive, ownership, uncertain } from '../errors.ts';
import type { CallOptions, RenewReceipt, RenewRequest } from '../provider.ts';
import { objectNames, parseResourceId, type ObjectNames } from './names.ts';
import { field } from './kube-object.ts';
import type { AdapterContext } from './observe.ts';
import { shutdownGraceOf } from './options-snapshot.ts';
import { validateOwner } from './owner-labels.ts';
import { sameShutdownTime, shutdownTimeFor } from './shutdown-time.ts';
import { validateClaim } from './validate-objects.ts';

/** Read, check and patch again after a conflict, this many times at most. */
const ATTEMPTS = 5;

function namesOf(request: RenewRequest): { names: ObjectNames; uid: string } {
  validateOwner(request.owner);
  const id = parseResourceId(request.resourceId);
  if (id === undefined) {
    throw definitive('invalid-resource-id', `Resource ID ${request.resourceId} is malformed`);
  }
  const names = objectNames(request.owner.operationId);
  if (id.name !== names.claim) {
    throw ownership(
      'resource-not-of-operation',
      `Resource ${request.resourceId} is not operation ${request.owner.operationId}'s`,
    );
  }
  return { names, uid: id.uid };
}

const absent = (names: ObjectNames) =>
  definitive('resource-absent', `SandboxClaim ${names.claim} is absent or being released; nothing to renew`);

export async function renew(
  { kube, snapshot }: AdapterContext,
  request: RenewRequest,
  call: CallOptions,
): Promise<RenewReceipt> {
  const { names, uid } = namesOf(request);
  const shutdownTime = shutdownTimeFor(request.expiresAt, shutdownGraceOf(snapshot));
  const receipt = { resourceId: request.resourceId, expiresAt: request.expiresAt };
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const claim = await kube.getCustom('SandboxClaim', snapshot.namespace, names.claim, call);
    if (claim === null || claim.metadata?.deletionTimestamp) throw absent(names);
    validateClaim(claim, request.owner, names, uid);
    if (sameShutdownTime(field(claim.spec, 'lifecycle', 'shutdownTime'), shutdownTime)) return receipt;
    const result = await kube.patchCustom(
      'SandboxClaim',
      snapshot.namespace,
      names.claim,
      {
        metadata: { uid, resourceVersion: claim.metadata?.resourceVersion ?? '' },
        spec: { lifecycle: { shutdownTime } },
      },
      call,
    );
    if (result.outcome === 'absent') throw absent(names);
    if (result.outcome === 'patched') {
      const written = field(result.object.spec, 'lifecycle', 'shutdownTime');
      if (!sameShutdownTime(written, shutdownTime)) {
        throw uncertain(
          'renew-unconfirmed',
          `SandboxClaim ${names.claim} reports shutdownTime ${String(written)}`,
        );
      }
      return receipt;
    }
  }
  throw uncertain('renew-contended', `SandboxClaim ${names.claim} kept changing; renew not confirmed`);
}

// The HTTP shape of `sandbox.host-control/v1`, shared by the listener and its client so the two
// cannot drift: the two routes, their answers, the problem members a host may read, and the size
// limits. The envelopes and results themselves are defined (and verified) elsewhere
// (envelope-schema.ts, host-result.ts); this file only says how they travel.
import { z } from 'zod';

/** Largest request body the listener reads (a host result with its output chunks). */
export const MAX_CONTROL_REQUEST_BYTES = 1024 * 1024;

/** Largest answer the client reads (a page of assignment envelopes). */
export const MAX_CONTROL_RESPONSE_BYTES = 4 * 1024 * 1024;

/** At most this many envelopes in one assignments answer; the host asks again with a higher `after`. */
export const MAX_ENVELOPES_PER_ANSWER = 256;

/** Problem types are `urn:sandlot:problem:<slug>`, as on the public API. */
export const PROBLEM_TYPE_PREFIX = 'urn:sandlot:problem:';

/** `after` is a non-negative decimal sequence number in its one canonical spelling. */
export const SEQUENCE_PATTERN = /^(0|[1-9][0-9]{0,15})$/;

export const assignmentsPath = (hostId: string, after: number): string =>
  `/v1/hosts/${encodeURIComponent(hostId)}/assignments?after=${after}`;

export const resultsPath = (hostId: string): string => `/v1/hosts/${encodeURIComponent(hostId)}/results`;

/** `/v1/hosts/{hostId}/{assignments|results}`; the segment is still percent-encoded. */
export const ROUTE_PATTERN = /^\/v1\/hosts\/([^/]+)\/(assignments|results)$/;

/**
 * The assignments answer as the client reads it. Each envelope stays `unknown`: the host judges it
 * with `verifyEnvelope`, which reports a legacy binding or a bad signature on its own code.
 */
export const assignmentsAnswerSchema = z.strictObject({
  envelopes: z.array(z.unknown()).max(MAX_ENVELOPES_PER_ANSWER),
});

export const resultAnswerSchema = z.strictObject({ accepted: z.literal(true) });

/** The problem members a client reads; anything else in a problem is ignored. */
export const problemAnswerSchema = z.looseObject({
  type: z.string().startsWith(PROBLEM_TYPE_PREFIX).max(200),
  status: z.number().int(),
});

// The Events port for protected material (docs/suspend-resume.md "The Events port"): at resume
// bootstrap Environment reads the acknowledged server configuration from Events' protected
// material route, with the original actor, and uses its bytes only when they are exactly the ones
// the saved acknowledgment names. actors/ports.ts re-exports this file; so that it can without an
// import cycle, this file names nothing from actors/ports.ts (EventsActor is CoreActor's shape).
import type { RuntimeStepRef } from '../runtime-core/runtime-operation.ts';
import type { ConfigurationAcknowledgment, ProtectedMaterial } from './material.ts';

export type { ConfigurationAcknowledgment, ProtectedMaterial };

/**
 * Who Events is asked for: the original actor, exactly as Core is asked (`CoreActor` in
 * actors/ports.ts has this shape): tenant, subject, the bearer it presented and when it expires.
 */
export interface EventsActor {
  tenantId: string;
  subject: string;
  bearer: string;
  expiresAt: Date;
}

/**
 * Events' protected material side (actors/runtime-events/). Throws EventsUnavailableError when
 * Events cannot answer, EventsDeniedError when it refuses the actor (or the bearer expired), and
 * EventsAnswerRefusedError when its answer breaks the contract (bytes of another length or
 * SHA-256 than acknowledged included): none of these is a verdict.
 */
export interface RuntimeEvents {
  /**
   * The exact bytes `acknowledgment` names, for the Environment serving `ref`, after Events' own
   * current Core and Runtime registration checks; null when there is none the actor may see
   * (another tenant's, or no current registration of the acknowledged session).
   */
  readProtectedMaterial(
    actor: EventsActor,
    ref: RuntimeStepRef,
    acknowledgment: ConfigurationAcknowledgment,
    signal: AbortSignal,
  ): Promise<ProtectedMaterial | null>;
}

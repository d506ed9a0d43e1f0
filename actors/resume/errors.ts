// Resume's refusals (docs/suspend-resume.md "Resume"), each leaving everything as it was unless it
// says otherwise. Messages name IDs, generations and revisions of the caller's own Environment and
// Core's operation, never a credential, an option or configuration bytes.
import { problemClass } from '../../lib/errors.ts';
import { ActorError } from '../errors.ts';

export const resumeRefusalCodes = [
  'resume-configuration-missing',
  'resume-restored-workspace-present',
  'resume-operation-changed',
  'resume-not-confirmed',
  'resume-source-mismatch',
  'resume-flush-evidence-mismatch',
  'resume-lifecycle-moved',
  'resume-network-refused',
  'resume-placement-mismatch',
  'resume-mount-mismatch',
  'resume-tree-hash-mismatch',
  'resume-attempt-unresolved',
  'resume-attempt-not-replaceable',
  'resume-attempt-unknown',
  'resume-attempt-refused',
  'resume-registration-mismatch',
  'resume-configuration-unavailable',
  'resume-host-mismatch',
  'resume-recovery-evidence-mismatch',
  'resume-profile-unresolved',
  'resume-profile-stale',
  'resume-journal-evidence-missing',
] as const;
export type ResumeRefusalCode = (typeof resumeRefusalCodes)[number];

export class ResumeRefusedError extends problemClass({ status: 409, title: 'Resume refused' }, ActorError) {
  constructor(
    override readonly code: ResumeRefusalCode,
    message: string,
  ) {
    // A request that cannot authorize resume at all, whatever the state: unprocessable.
    const unprocessable =
      code === 'resume-configuration-missing' || code === 'resume-restored-workspace-present';
    super(message, { code, status: unprocessable ? 422 : 409 });
  }

  override get extensions() {
    return { code: this.code };
  }
}

export const refuseResumeOn = (code: ResumeRefusalCode, problem: string | null): void => {
  if (problem !== null) throw new ResumeRefusedError(code, problem);
};

/** A port bootstrap needs is not configured (Events), or its outcome is not known yet: 503. */
export class ResumeUnavailableError extends problemClass(
  { status: 503, title: 'Resume unavailable' },
  ActorError,
) {
  constructor(readonly what: 'events' | 'outcome') {
    super(
      what === 'events'
        ? 'no Events service is configured: the acknowledged configuration cannot be read'
        : "the attempt's delivery has no outcome yet: repeat the same request",
      { code: what === 'events' ? 'runtime-events-unavailable' : 'resume-outcome-unknown' },
    );
  }
}

// Resume's refusals (docs/suspend-resume.md "Resume"), each leaving everything as it was unless it
// says otherwise. Messages name IDs, generations and revisions of the caller's own Environment and
// Core's operation, never a credential, an option or configuration bytes.
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
] as const;
export type ResumeRefusalCode = (typeof resumeRefusalCodes)[number];

export class ResumeRefusedError extends ActorError {
  override readonly status: 409 | 422;
  override readonly title = 'Resume refused';
  constructor(
    override readonly code: ResumeRefusalCode,
    message: string,
  ) {
    super(code, message);
    // A request that cannot authorize resume at all, whatever the state: unprocessable.
    this.status =
      code === 'resume-configuration-missing' || code === 'resume-restored-workspace-present' ? 422 : 409;
  }

  override get extensions() {
    return { code: this.code };
  }
}

export const refuseResumeOn = (code: ResumeRefusalCode, problem: string | null): void => {
  if (problem !== null) throw new ResumeRefusedError(code, problem);
};

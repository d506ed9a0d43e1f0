// What an accepted command must satisfy before any object is made for it: version, source and seed
// agree, the seed is exactly the accepted one, and the working directory is a repository path.
import { createHash } from 'node:crypto';
import { pathProblem } from '../../formats/awscapt2/repository-path.ts';
import type { CommandPodRequest } from '../build-test.ts';
import { definitive } from '../errors.ts';

export function checkCommand(request: CommandPodRequest): void {
  const { command, seed } = request;
  const refuse = (message: string) => definitive('invalid-command', `Agent Sandbox BuildTest: ${message}`);
  if (command.version === 2) {
    const source = command.source;
    if (source === null || seed === null)
      throw refuse('a version 2 command needs its source and the seed bytes');
    if (
      seed.length !== source.seedLength ||
      createHash('sha256').update(seed).digest('hex') !== source.seedSha256
    ) {
      throw refuse('the seed is not the accepted one (its SHA-256 or length differs)');
    }
  } else if (command.source !== null || seed !== null) {
    throw refuse('a version 1 command has no source and no seed');
  }
  if (command.workingDirectory !== '.' && pathProblem(command.workingDirectory) !== undefined) {
    throw refuse('the working directory must be "." or a repository path');
  }
  if (!command.executable.startsWith('/')) throw refuse('the executable must be an absolute path');
}

// Repository-relative paths as a document stores them: `/`-separated UTF-8, no empty, `.` or `..`
// segment, no control character, at most MAX_PATH_BYTES, and never inside the root Git metadata
// directory (the collector excludes only that one). Paths order by their UTF-8 bytes, so the order is
// the same in every language that reads the document.
import { MAX_PATH_BYTES } from './document-limits.ts';

/** Why `path` is not a repository path, or undefined when it is one. */
export function pathProblem(path: string): string | undefined {
  if (typeof path !== 'string' || path === '') return 'is empty';
  // A lone surrogate does not survive UTF-8 (it becomes U+FFFD), so the round trip tells.
  if (Buffer.from(path, 'utf8').toString('utf8') !== path) return 'is not well-formed Unicode';
  // eslint-disable-next-line no-control-regex -- control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(path)) return 'contains a control character';
  if (Buffer.byteLength(path, 'utf8') > MAX_PATH_BYTES) return `exceeds ${MAX_PATH_BYTES} bytes`;
  const segments = path.split('/');
  if (segments.some((s) => s === '' || s === '.' || s === '..')) {
    return 'has an empty, "." or ".." segment (or a leading or trailing "/")';
  }
  if (segments[0] === '.git') return 'is inside the root Git metadata directory';
  return undefined;
}

export function isRepositoryPath(path: string): boolean {
  return pathProblem(path) === undefined;
}

/** Byte order of the UTF-8 encodings. */
export function comparePaths(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** `items` in path byte order (each path encoded once, not once per comparison). */
export function sortByPath<T extends { path: string }>(items: readonly T[]): T[] {
  return items
    .map((item) => ({ key: Buffer.from(item.path, 'utf8'), item }))
    .sort((a, b) => Buffer.compare(a.key, b.key))
    .map(({ item }) => item);
}

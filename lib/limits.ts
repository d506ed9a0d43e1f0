// Input limits Sandlot enforces at the edge, so nothing a client sends reaches the database or a
// recursive encoder unchecked. docs/api.md lists them; change both together.

/** Largest integer a stored generation may hold (PostgreSQL `integer`). */
export const MAX_INT32 = 2_147_483_647;

/** Largest request body accepted, in bytes; a larger one is 413 before it is parsed. */
export const MAX_BODY_BYTES = 256 * 1024;

/** Deepest nesting of a free-form JSON document a client may store (a network policy). */
export const MAX_JSON_DEPTH = 32;

/** Text that may be stored and logged: no control characters (NUL included), bounded length. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
export const PRINTABLE_TEXT = /^[^\u0000-\u001f\u007f]+$/;

/** True when no array or object in `value` is nested deeper than `max` levels (iterative). */
export function jsonDepthWithin(value: unknown, max: number): boolean {
  const stack: { node: unknown; depth: number }[] = [{ node: value, depth: 0 }];
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth >= max) return false;
    for (const child of Object.values(node as Record<string, unknown>))
      stack.push({ node: child, depth: depth + 1 });
  }
  return true;
}

// The checkout's root directory (bench/lib/ is two levels below it).
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

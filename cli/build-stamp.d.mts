// Types of cli/build-stamp.mjs, for the TypeScript that imports it (scripts/build.ts, tests).
export declare const STAMP_FILE: string;
export declare const RUNTIME_FOLDERS: readonly string[];
export declare const BROWSER_FOLDERS: readonly string[];
export declare const SOURCE_FOLDERS: readonly string[];
export declare function buildInputs(root: string): string[];
export declare function sourceStamp(root: string): string;
export declare function readStamp(outDir: string): string | undefined;
export declare function buildState(root: string, outDir: string): 'current' | 'stale' | 'missing';

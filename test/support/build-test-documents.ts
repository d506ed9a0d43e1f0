// Inventories and raw framing for output-document tests: a baseline and a collected tree built from
// the same file list, and `frame`/`reseal`, which assemble a document without serialize's checks so a
// test can hand parse exactly the bytes it means to refuse.
import type { ConstructInput, DeclaredOutput } from '../../formats/awscapt2/construct-document.ts';
import { MAGIC } from '../../formats/awscapt2/document-limits.ts';
import {
  encodeManifest,
  type BaselineEntry,
  type Manifest,
} from '../../formats/awscapt2/document-manifest.ts';
import { sha256Of, type FileMode, type PackageFile } from '../../formats/awscapt2/file-package.ts';
import { gitBlobId } from '../../formats/awscapt2/git-binary-patch.ts';

export const file = (path: string, content: string | Uint8Array, mode: FileMode = '100644'): PackageFile => ({
  path,
  mode,
  content: typeof content === 'string' ? Buffer.from(content, 'utf8') : content,
});

export function baselineOf(files: readonly PackageFile[]): BaselineEntry[] {
  return files.map((f) => ({
    path: f.path,
    mode: f.mode,
    size: f.content.length,
    sha256: sha256Of(f.content),
    blobId: gitBlobId(f.content),
  }));
}

/** Each named path declared, with the evidence of its file in `collected`. */
export function outputsOf(collected: readonly PackageFile[], paths: readonly string[]): DeclaredOutput[] {
  const byPath = new Map(collected.map((f) => [f.path, f]));
  return paths.map((path) => {
    const found = byPath.get(path);
    if (found === undefined) throw new Error(`no collected file ${path}`);
    return { path, evidence: { size: found.content.length, sha256: sha256Of(found.content) } };
  });
}

export const binding = {
  operationId: 'op-build-1',
  checkpointId: 'cp-7',
  requestFingerprint: 'f'.repeat(64),
};
export const source = { seedSha256: 'e'.repeat(64), seedLength: 4096, baseSha: 'c'.repeat(40) };

export const BASE_FILES = [
  file('README.md', '# demo\n'),
  file('src/index.js', 'console.log(1);\n'),
  file('scripts/build.sh', '#!/bin/sh\nexit 0\n', '100755'),
];

/** A command that changed src/index.js and produced dist/app.js, both declared. */
export function sampleInput(): ConstructInput {
  const collected = [
    BASE_FILES[0]!,
    file('src/index.js', 'console.log(2);\n'),
    BASE_FILES[2]!,
    file('dist/app.js', Buffer.from([0, 1, 2, 255, 10])),
  ];
  return {
    binding,
    source,
    baseline: baselineOf(BASE_FILES),
    collected,
    outputs: outputsOf(collected, ['src/index.js', 'dist/app.js']),
  };
}

/** Header + sections, exactly as given: no check, no digest update. */
export function frame(manifest: Uint8Array, patch: Uint8Array, pkg: Uint8Array): Buffer {
  const header = Buffer.alloc(24);
  header.write(MAGIC, 0, 'latin1');
  header.writeUInt32BE(manifest.length, 8);
  header.writeUInt32BE(patch.length, 12);
  header.writeBigUInt64BE(BigInt(pkg.length), 16);
  return Buffer.concat([header, manifest, patch, pkg]);
}

/** Frames sections after recording their digests in the manifest: only what the test changed is wrong. */
export function reseal(manifest: Manifest, patch: Uint8Array, pkg: Uint8Array): Buffer {
  const sealed: Manifest = {
    ...manifest,
    patch: { sha256: sha256Of(patch), length: patch.length },
    package: { sha256: sha256Of(pkg), length: pkg.length },
  };
  return frame(encodeManifest(sealed), patch, pkg);
}

// The generated diagrams in our Markdown: which blocks each document must hold and how a block is
// rewritten. A block lies between `<!-- diagram:<name>:start -->` and `<!-- diagram:<name>:end -->`;
// everything between the markers belongs to the generator (scripts/diagrams.ts), everything outside
// them to the document's authors. Pure: the script and the staleness test read and write the files.
import { exportMachine, regionMermaid } from '../machines/environment-diagram.ts';

/** Each diagram by block name, as the Markdown between its markers (a fenced Mermaid block). */
export const diagrams: Readonly<Record<string, () => string>> = {
  environment: () => exportMachine('mermaid'),
  'environment.lifecycle': () => regionMermaid('lifecycle'),
  'environment.sandbox': () => regionMermaid('sandbox'),
  'environment.cleanup': () => regionMermaid('cleanup'),
  'environment.workspace': () => regionMermaid('workspace'),
};

/** The documents with generated diagrams, relative to the repository root, and the blocks each holds. */
export const documents: Readonly<Record<string, readonly string[]>> = {
  'README.md': ['environment'],
  'docs/architecture.md': [
    'environment.lifecycle',
    'environment.sandbox',
    'environment.cleanup',
    'environment.workspace',
  ],
};

const BLOCK = /(<!-- diagram:([\w.-]+):start -->\n)([\s\S]*?)(<!-- diagram:\2:end -->)/g;

/** A block's body: a blank line each side keeps Prettier's Markdown formatting as it is. */
export const blockText = (diagram: string) => `\n\`\`\`mermaid\n${diagram}\`\`\`\n\n`;

/** The names of the blocks in `text`, in order. */
export const blockNames = (text: string): string[] => [...text.matchAll(BLOCK)].map((m) => m[2] ?? '');

/**
 * `text` with every block regenerated. Throws on a block whose diagram is unknown, a start marker
 * without its end, or a block the document must hold but does not (so deleting a marker is noticed).
 */
export function refresh(document: string, text: string): string {
  const names = blockNames(text);
  const starts = [...text.matchAll(/<!-- diagram:([\w.-]+):start -->/g)].map((m) => m[1]);
  if (starts.length !== names.length)
    throw new Error(`${document}: a diagram start marker has no matching end marker`);
  const missing = (documents[document] ?? []).filter((name) => !names.includes(name));
  if (missing.length > 0) throw new Error(`${document}: no block for ${missing.join(', ')}`);
  return text.replace(BLOCK, (_all, start: string, name: string, _old: string, end: string) => {
    const diagram = diagrams[name];
    if (diagram === undefined) throw new Error(`${document}: no diagram named ${name}`);
    return `${start}${blockText(diagram())}${end}`;
  });
}

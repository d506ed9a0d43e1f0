// `sandlot machines export`: the Environment machine's definition, generated from the machine itself
// (machines/environment-diagram.ts): JSON the Stately editor and inspector accept, Mermaid (the
// diagrams in README.md and docs/architecture.md) or Graphviz DOT.
import { exportMachine, type DiagramFormat } from '../machines/environment-diagram.ts';

export interface MachinesExportOptions {
  format: DiagramFormat;
}

export async function machinesExportCommand(options: MachinesExportOptions): Promise<void> {
  const text = exportMachine(options.format);
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  await Promise.resolve();
}

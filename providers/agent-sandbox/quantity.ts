// Kubernetes resource quantities, only the plain forms we accept in settings: CPU as cores or
// millicores, memory as bytes with a binary or decimal suffix. The API server may rewrite a quantity
// into another canonical spelling ("1000m" → "1"), so read-back compares values, never strings.

const BINARY: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40 };
const DECIMAL: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12 };

/** Cores; undefined when the text is not `<int>m` or `<int>[.<up to 3 digits>]`. */
export function cpuCores(text: string): number | undefined {
  const milli = /^([0-9]{1,9})m$/.exec(text);
  if (milli) return Number(milli[1]) / 1000;
  return /^[0-9]{1,6}(\.[0-9]{1,3})?$/.test(text) ? Number(text) : undefined;
}

/** Bytes; undefined when the text is not an integer with an optional Ki/Mi/Gi/Ti or k/M/G/T suffix. */
export function memoryBytes(text: string): number | undefined {
  const match = /^([0-9]{1,15})(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(text);
  if (!match) return undefined;
  const suffix = match[2] ?? '';
  return Number(match[1]) * (BINARY[suffix] ?? DECIMAL[suffix] ?? Number.NaN);
}

export const CPU_BOUNDS = { min: 0.01, max: 64 } as const;
export const MEMORY_BOUNDS = { min: 64 * 2 ** 20, max: 256 * 2 ** 30 } as const;

/** Reads back a quantity the API server returned (string or number) as a value in `unit`. */
export function quantityValue(value: unknown, unit: 'cpu' | 'memory'): number | undefined {
  const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value : undefined;
  if (text === undefined) return undefined;
  return unit === 'cpu' ? cpuCores(text) : memoryBytes(text);
}

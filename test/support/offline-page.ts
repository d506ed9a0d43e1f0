// What an HTML page would fetch: every src= and href=, every module an inline script imports, every
// url(...) a style loads; and whether a URL points at another host. For the API reference page,
// which must work offline.

export function referencedUrls(html: string): string[] {
  const attributes = [...html.matchAll(/\b(?:src|href)\s*=\s*["']([^"']+)["']/gi)].map((m) => m[1]!);
  const imports = [...html.matchAll(/\bimport\b[^'"]*["']([^"']+)["']/g)].map((m) => m[1]!);
  const styles = [...html.matchAll(/url\(\s*["']?([^"')]+)/gi)].map((m) => m[1]!);
  return [...attributes, ...imports, ...styles];
}

/** `https://…`, `http://…`, `//host/…` (scheme-relative): anything not served by the page's origin. */
export const isExternal = (url: string): boolean => /^(?:[a-z][a-z0-9+.-]*:)?\/\//i.test(url);

// Mermaid, which the page loads as a classic script before its modules (index.html: both deferred,
// run in document order), is a global of the window, not an import: the bundle does not carry it.
import type { Mermaid } from "mermaid";

export const mermaid = (): Mermaid => (globalThis as unknown as { mermaid: Mermaid }).mermaid;

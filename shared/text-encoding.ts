/**
 * Text files as their bytes say, never guessed: UTF-8, or UTF-16 when a byte-order mark says so. Reading
 * a Latin-1 or UTF-16 file as UTF-8 replaces its bytes with U+FFFD and checks a draft that nobody wrote,
 * so a file in any other encoding is refused, naming the first byte that is not UTF-8.
 */

/** The text of a file's bytes, or why it cannot be read as text (one line, without the file's name). */
type Decoded = { text: string } | { problem: string };

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const utf16le = new TextDecoder("utf-16le", { fatal: true, ignoreBOM: true });

/** The offset of the first byte that does not continue a well-formed UTF-8 sequence (an approximation past it). */
function firstInvalidUtf8(bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length; ) {
    const c = bytes[i] as number;
    const length = c < 0x80 ? 1 : c >> 5 === 6 ? 2 : c >> 4 === 14 ? 3 : c >> 3 === 30 ? 4 : 0;
    if (length === 0) return i;
    for (let k = 1; k < length; k++) if (((bytes[i + k] ?? 0) & 0xc0) !== 0x80) return i;
    i += length;
  }
  return 0;
}

const hex = (byte: number | undefined) => `0x${(byte ?? 0).toString(16).toUpperCase().padStart(2, "0")}`;

/** `bytes` as UTF-8 (no mark), or as UTF-8 or UTF-16 named by a byte-order mark; else the problem. */
export function decodeText(bytes: Uint8Array): Decoded {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return decodeUtf16(bytes.subarray(2), "UTF-16LE");
  if (bytes[0] === 0xfe && bytes[1] === 0xff) {
    const swapped = Buffer.from(bytes.subarray(2));
    if (swapped.length % 2 === 0) swapped.swap16();
    return decodeUtf16(swapped, "UTF-16BE");
  }
  const body = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes;
  // JSON text never holds a NUL byte: UTF-16 or UTF-32 without a byte-order mark does.
  const nul = body.indexOf(0);
  if (nul >= 0)
    return {
      problem: `is not UTF-8 text (a NUL byte at offset ${nul}: UTF-16 without a byte-order mark?); save it as UTF-8`,
    };
  try {
    return { text: utf8.decode(body) };
  } catch {
    const at = firstInvalidUtf8(body);
    return {
      problem: `is not UTF-8 text (byte ${hex(body[at])} at offset ${at}: Latin-1 or Windows-1252?); save it as UTF-8`,
    };
  }
}

function decodeUtf16(bytes: Uint8Array, name: string): Decoded {
  try {
    if (bytes.length % 2 !== 0) throw new Error("odd length");
    return { text: utf16le.decode(bytes) };
  } catch {
    return { problem: `is not well-formed ${name} text, as its byte-order mark says it is` };
  }
}

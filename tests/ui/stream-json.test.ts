import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeJsonStream } from "../../ui/stream-json.js";

/** The viewer's run pages are written in pieces (issue 34): the text must be JSON.stringify's, byte for byte. */

let value: unknown;
let server: Server;
let url: string;
beforeAll(async () => {
  server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    void writeJsonStream(res, value);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const served = async (v: unknown) => {
  value = v;
  return (await fetch(url)).text();
};

describe("writeJsonStream", () => {
  it("writes what JSON.stringify writes, for any JSON value", async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), async (v) => {
        expect(await served(v)).toBe(JSON.stringify(v));
      }),
      { numRuns: 200 },
    );
  });

  it("leaves out undefined properties and writes undefined items as null, as JSON.stringify does", async () => {
    const v = { a: undefined, b: [undefined, 1, () => 2], c: { toJSON: () => "x" }, d: 'é\u2028"' };
    expect(await served(v)).toBe(JSON.stringify(v));
  });

  it("writes a value of megabytes whole, in many pieces", async () => {
    const v = { items: Array.from({ length: 60_000 }, (_, i) => ({ name: `item ${i}`, tags: ["a", "b"] })) };
    const text = await served(v);
    expect(text.length).toBeGreaterThan(1_000_000);
    expect(text).toBe(JSON.stringify(v));
  });
});

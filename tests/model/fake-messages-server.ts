import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A request the fake server received, body parsed as JSON. */
export interface ReceivedRequest {
  method: string;
  path: string;
  /** The path as sent, percent-encoding kept (`path` is decoded). */
  rawPath: string;
  headers: IncomingMessage["headers"];
  body: Record<string, unknown>;
}

/** How the server answers one request. `delayMs` holds the answer back (to trigger client timeouts). */
export interface FakeReply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  delayMs?: number;
}

/**
 * A local HTTP server speaking just enough of the Messages API (and of Bedrock's InvokeModel) for the
 * real SDKs to talk to: each request gets the next queued reply, and every request is kept for asserts.
 */
export class FakeMessagesServer {
  readonly received: ReceivedRequest[] = [];
  private readonly replies: FakeReply[] = [];
  private readonly server: Server;
  private readonly timers = new Set<NodeJS.Timeout>();

  private constructor() {
    this.server = createServer((req, res) => {
      void this.handle(req, res);
    });
  }

  static async start(): Promise<FakeMessagesServer> {
    const fake = new FakeMessagesServer();
    await new Promise<void>((resolve) => fake.server.listen(0, "127.0.0.1", resolve));
    return fake;
  }

  get baseURL(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** Queues replies, answered in order. */
  reply(...replies: FakeReply[]): void {
    this.replies.push(...replies);
  }

  /** Forgets received requests and pending replies between tests. */
  reset(): void {
    this.received.length = 0;
    this.replies.length = 0;
  }

  async stop(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.server.closeAllConnections();
    await new Promise<void>((resolve, reject) =>
      this.server.close((error) => (error ? reject(error) : resolve())),
    );
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    this.received.push({
      method: req.method ?? "",
      path: decodeURIComponent(req.url ?? ""),
      rawPath: req.url ?? "",
      headers: req.headers,
      body: text === "" ? {} : (JSON.parse(text) as Record<string, unknown>),
    });
    const reply = this.replies.shift() ?? {
      status: 500,
      body: { type: "error", error: { type: "api_error", message: "no reply queued in the fake server" } },
    };
    const send = () => {
      if (res.destroyed) return;
      res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
      res.end(JSON.stringify(reply.body));
    };
    if (reply.delayMs === undefined) {
      send();
      return;
    }
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      send();
    }, reply.delayMs);
    this.timers.add(timer);
  }
}

/** A Messages API answer calling `toolName` with `input`, after a line of text. */
export function toolUseMessage(
  model: string,
  toolName: string,
  input: unknown,
  usage: Record<string, number | null> = { input_tokens: 1200, output_tokens: 800 },
) {
  return {
    id: "msg_01",
    type: "message",
    role: "assistant",
    model,
    content: [
      { type: "text", text: "Correcting the stem." },
      { type: "tool_use", id: "toolu_01", name: toolName, input },
    ],
    stop_reason: "tool_use",
    stop_sequence: null,
    usage,
  };
}

/** The Anthropic API's error body. */
export function apiError(type: string, message: string) {
  return { type: "error", error: { type, message } };
}

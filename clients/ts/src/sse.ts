// A Server-Sent Events reader over fetch's body stream (the WHATWG event-stream format:
// `id:`, `data:`, `event:`, `retry:` fields, comments, blank line ends an event).

/** One event as read off the wire. */
export interface SseFrame {
  id: string | undefined;
  event: string | undefined;
  data: string;
  /** A `retry:` field, in milliseconds. */
  retry: number | undefined;
}

/** Splits a byte stream into SSE frames; frames without `data` (keep-alives) are skipped. */
export async function* readFrames(body: ReadableStream<Uint8Array>): AsyncGenerator<SseFrame> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buf = "";
  let frame: SseFrame = { id: undefined, event: undefined, data: "", retry: undefined };
  let hasData = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        // A CR at the end may be the first half of a CRLF split across chunks.
        if (nl === buf.length - 1 && buf[nl] === "\r") break;
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
        if (line === "") {
          if (hasData) yield frame;
          frame = { id: undefined, event: undefined, data: "", retry: undefined };
          hasData = false;
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        switch (field) {
          case "data":
            frame.data = hasData ? `${frame.data}\n${value}` : value;
            hasData = true;
            break;
          case "id":
            frame.id = value;
            break;
          case "event":
            frame.event = value;
            break;
          case "retry":
            if (/^\d+$/.test(value)) frame.retry = Number(value);
            break;
        }
      }
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}

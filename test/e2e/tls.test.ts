/** The TLS choices (docs/security.md): the operator's PEM pair, and --no-tls for plain HTTP/1.1 and h2c. */
import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import http2 from "node:http2";
import tls from "node:tls";
import { selfSigned } from "../../src/http/tls.ts";
import { PROTOS, startFanout, tempDir } from "./harness.ts";

test("a given PEM pair is served, over HTTP/1.1 and HTTP/2 (ALPN)", async () => {
  const dir = tempDir();
  const pair = await selfSigned(new Date());
  writeFileSync(join(dir, "cert.pem"), pair.cert);
  writeFileSync(join(dir, "key.pem"), pair.key);
  const fanout = await startFanout({ env: { FANOUT_TLS_CERT: join(dir, "cert.pem"), FANOUT_TLS_KEY: join(dir, "key.pem") } });
  try {
    const port = Number(new URL(fanout.url).port);
    const served = await new Promise<{ pem: string; alpn: string | false | null }>((resolve, reject) => {
      const socket = tls.connect({ host: "127.0.0.1", port, rejectUnauthorized: false, ALPNProtocols: ["h2", "http/1.1"] }, () => {
        const der = socket.getPeerCertificate().raw;
        resolve({ pem: der.toString("base64"), alpn: socket.alpnProtocol });
        socket.end();
      });
      socket.on("error", reject);
    });
    expect(pair.cert.replace(/-----[^-]+-----|\s/g, "")).toBe(served.pem);
    expect(served.alpn).toBe("h2");
    for (const proto of PROTOS) expect((await fanout.call(proto, "GET", "/v1/queues")).status).toBe(200);
  } finally {
    await fanout.stop();
  }
});

test("--no-tls serves plain HTTP/1.1 and h2c", async () => {
  const fanout = await startFanout({ args: ["--no-tls"] });
  try {
    expect(fanout.url.startsWith("http://")).toBe(true);
    expect((await fanout.call("h1", "POST", "/v1/queues", { body: { name: "plain" } })).status).toBe(200);
    const session = http2.connect(fanout.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = session.request({ ":path": "/v1/queues", "x-api-key": fanout.key });
      req.on("response", (h) => resolve(Number(h[":status"])));
      req.on("error", reject);
      req.end();
    });
    session.close();
    expect(status).toBe(200);
  } finally {
    await fanout.stop();
  }
});

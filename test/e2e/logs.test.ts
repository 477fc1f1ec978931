/**
 * The server's whole output (stdout and stderr) over a scenario that makes every kind of secret the service
 * handles — API keys, listener secrets and their rotations, the bootstrap key, the metrics token — and uses
 * them: deliveries that succeed, fail, time out and are refused, a listener that goes down, messages missed,
 * disabled keys, scrapes with the right and a wrong token. No secret may appear in it, in either log format;
 * in JSON every line is one object with time, level and msg, and the lines docs/metrics.md names are there.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startFanout, waitFor, type Fanout } from "./harness.ts";
import { deliveryApi, receiverSet, status } from "./receiver.ts";

const receivers = receiverSet();
afterAll(() => receivers.closeAll());

type Made = { secrets: string[]; queue: string; listeners: Record<string, string>; payloadMarker: string };

async function closedPort(): Promise<number> {
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = server.port!;
  server.stop(true);
  return port;
}

/** Every way the scenario's secrets could be written: as made, and a listener secret's key without its prefix. */
function spellings(secret: string): string[] {
  return secret.startsWith("whsec_") ? [secret, secret.slice("whsec_".length)] : [secret];
}

async function scenario(fanout: Fanout, metricsToken: string): Promise<Made> {
  const api = deliveryApi(fanout);
  const secrets: string[] = [fanout.key, metricsToken];
  for (let i = 0; i < 2; i++) {
    const made = await api.call("POST", "/v1/api_keys", { name: `key-${i}` });
    secrets.push(made.api_key);
    expect((await fanout.call("h1", "GET", "/v1/queues", { key: made.api_key })).status).toBe(200);
    await api.call("PUT", `/v1/api_keys/${made.id}`, { status: "disabled" });
    expect((await fanout.call("h2", "GET", "/v1/queues", { key: made.api_key })).status).toBe(401);
  }
  const ok = await receivers.start();
  const failing = (await receivers.start()).answer("/notify", status(500));
  const hanging = (await receivers.start()).answer("/notify", () => "hang");
  const sick = (await receivers.start()).answer("/live", status(503));
  const queue = await api.queue();
  const listeners: Record<string, string> = {};
  const add = async (name: string, urls: { notifyUrl: string; livenessUrl: string }) => {
    const made = await api.listener(queue, name, urls);
    secrets.push(made.secret);
    listeners[name] = made.id;
  };
  await add("ok", ok);
  await add("failing", { notifyUrl: failing.notifyUrl, livenessUrl: ok.livenessUrl });
  await add("hanging", { notifyUrl: hanging.notifyUrl, livenessUrl: ok.livenessUrl });
  await add("refused", { notifyUrl: `http://127.0.0.1:${await closedPort()}/notify`, livenessUrl: ok.livenessUrl });
  await add("down", { notifyUrl: sick.notifyUrl, livenessUrl: sick.livenessUrl });
  for (const name of ["ok", "failing"]) {
    const rotated = await api.call("POST", `/v1/queues/${queue}/listeners/${listeners[name]}/secret/rotate`);
    secrets.push(rotated.secret, rotated.previous_secret);
    const shown = await api.call("GET", `/v1/queues/${queue}/listeners/${listeners[name]}/secret`);
    secrets.push(...Object.values(shown).filter((v): v is string => typeof v === "string" && v.startsWith("whsec_")));
  }
  const payloadMarker = `payload-${crypto.randomUUID()}`;
  for (let i = 0; i < 3; i++) await api.publish(queue, { marker: payloadMarker, i });
  expect((await fanout.call("h1", "GET", "/metrics", { key: null, headers: { authorization: `Bearer ${metricsToken}` } })).status).toBe(200);
  expect((await fanout.call("h1", "GET", "/metrics", { key: null, headers: { authorization: `Bearer ${metricsToken}x` } })).status).toBe(401);
  expect(ok.deliveries().length).toBeLessThanOrEqual(3);
  await ok.waitForDeliveries(3);
  return { secrets, queue, listeners, payloadMarker };
}

for (const format of ["text", "json"] as const) {
  describe(`--log-format ${format}`, () => {
    let fanout: Fanout;
    let made: Made;
    let output: string;
    const metricsToken = `metrics-token-${crypto.randomUUID()}`;

    beforeAll(async () => {
      fanout = await startFanout({
        args: ["--log-format", format],
        env: { FANOUT_METRICS_TOKEN: metricsToken, FANOUT_RETRY_SCHEDULE: "50ms,50ms", FANOUT_DELIVERY_TIMEOUT: "200ms",
          FANOUT_LIVENESS_INTERVAL: "100ms", FANOUT_LOCKOUT: "3/1m:1s" },
      });
      made = await scenario(fanout, metricsToken);
      // The listeners that never acknowledge miss the three messages; the down one has logged its change of state.
      await waitFor(() => fanout.output().split("\n").filter((l) => l.includes("message missed")).length >= 9
        && fanout.output().includes("listener down"), 15_000, () => `lines missing:\n${fanout.output()}`);
      expect(await fanout.stop()).toBe(0);
      output = fanout.output();
    }, 60_000);

    test("no secret made or configured appears anywhere in the output, nor a message's data", () => {
      expect(made.secrets.length).toBeGreaterThanOrEqual(12);
      for (const secret of made.secrets.flatMap(spellings)) expect({ secret, found: output.includes(secret) }).toEqual({ secret, found: false });
      expect(output).not.toContain(made.payloadMarker);
    });

    test("the lines of a start, a liveness change, missed messages and a stop are there, with ids by name", () => {
      const lines = output.split("\n").filter((l) => l.trim() !== "");
      const find = (text: string) => lines.filter((l) => l.includes(text));
      expect(find("listening on").filter((l) => l.includes("retryScheduleMs"))).toHaveLength(1);
      expect(find("metricsToken")[0]).toContain(format === "json" ? '"metricsToken":"set"' : 'metricsToken="set"');
      const down = find("listener down")[0]!;
      expect(down).toContain(made.listeners.down!);
      expect(down).toContain(made.queue);
      // Probed every 100 ms, failing every time: two changes of state (to unstable, then to down), two lines.
      expect(find(made.listeners.down!).filter((l) => l.includes("listener ")).map((l) => /listener (unstable|down)/.exec(l)?.[1]))
        .toEqual(["unstable", "down"]);
      for (const name of ["failing", "hanging", "refused"]) {
        expect({ name, missed: find("message missed").filter((l) => l.includes(made.listeners[name]!)).length }).toEqual({ name, missed: 3 });
      }
      expect(find("shutting down")).toHaveLength(1);
      expect(find("stopped")).toHaveLength(1);
      if (format !== "json") return;
      for (const line of lines) {
        const entry = JSON.parse(line);
        expect(entry.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        expect(["debug", "info", "warn", "error"]).toContain(entry.level);
        expect(typeof entry.msg).toBe("string");
      }
      const missed = lines.map((l) => JSON.parse(l)).find((e) => e.msg === "message missed");
      expect(missed).toMatchObject({ level: "warn", listener: expect.stringMatching(/^lst_/), queue: made.queue, message: expect.stringMatching(/^msg_/) });
    });
  });
}

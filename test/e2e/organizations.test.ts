/**
 * Organizations (api clients) end to end (docs/api.md): get and rename through the API, and
 * isolation: a second organization made with `fanout orgs create` sees none of the first one's resources.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PROTOS, cli, startFanout, type Fanout } from "./harness.ts";

type Org = { id: string; name: string; key: string };

let fanout: Fanout;
let home: Org;
let other: Org;

const label = () => crypto.randomUUID().slice(0, 8);

/** `fanout orgs create` beside the running server, on the same database file. */
async function createOrg(name: string): Promise<Org> {
  const r = await cli(["orgs", "create", name], { FANOUT_DB: fanout.dbPath });
  expect(r.code).toBe(0);
  return { name, id: r.stdout.match(/id:\s+(\S+)/)![1]!, key: r.stdout.match(/owner key:\s+(\S+)/)![1]! };
}

beforeAll(async () => {
  fanout = await startFanout({ env: { FANOUT_LOCKOUT: "1000/1m:1s" } });
  const listed = await cli(["orgs", "list"], { FANOUT_DB: fanout.dbPath });
  const [id, name] = listed.stdout.trim().split("\t");
  home = { id: id!, name: name!, key: fanout.key };
  other = await createOrg(`com.example.other-${label()}`);
});
afterAll(async () => void (await fanout.stop()));

for (const proto of PROTOS) {
  describe(`organizations over ${proto}`, () => {
    const call = (method: string, path: string, opts?: Parameters<Fanout["call"]>[3]) => fanout.call(proto, method, path, opts);
    const current = async () => (await call("GET", `/v1/api_clients/${home.id}`)).body.api_client;

    test("GET answers the key's own organization with links", async () => {
      const r = await call("GET", `/v1/api_clients/${home.id}`);
      expect(r.status).toBe(200);
      expect(r.body.api_client).toEqual({ id: home.id, name: expect.any(String), events_queue_id: null });
      expect(r.body._links.self.href).toBe(`${fanout.url}/v1/api_clients/${home.id}`);
      expect(r.body._links.queues.href).toBe(`${fanout.url}/v1/queues`);
      const theirs = await call("GET", `/v1/api_clients/${other.id}`, { key: other.key });
      expect(theirs.body.api_client).toEqual({ id: other.id, name: other.name, events_queue_id: null });
    });

    test("PUT renames; the new name is what the CLI lists too", async () => {
      const name = `org.example.home-${proto}-${label()}`;
      const r = await call("PUT", `/v1/api_clients/${home.id}`, { body: { name } });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ api_client: { id: home.id, name, events_queue_id: null }, _links: expect.objectContaining({ self: { href: `${fanout.url}/v1/api_clients/${home.id}` } }) });
      expect(await current()).toEqual({ id: home.id, name, events_queue_id: null });
      const listed = await cli(["orgs", "list"], { FANOUT_DB: fanout.dbPath });
      expect(listed.stdout).toContain(`${home.id}\t${name}`);

      const same = await call("PUT", `/v1/api_clients/${home.id}`, { body: { id: home.id, name } });
      expect(same.status).toBe(200);
      const empty = await call("PUT", `/v1/api_clients/${home.id}`, { headers: { "content-length": "0" } });
      expect(empty.body.api_client).toEqual({ id: home.id, name, events_queue_id: null });

      const longest = `${proto}${"a".repeat(247)}.com`; // 253 characters, the most an organization name may have
      expect((await call("PUT", `/v1/api_clients/${home.id}`, { body: { name: longest } })).body.api_client.name).toBe(longest);
    });

    test("a name another organization holds is 409", async () => {
      const before = await current();
      const r = await call("PUT", `/v1/api_clients/${home.id}`, { body: { name: other.name } });
      expect(r.body).toEqual({ title: "Conflict", status: 409, detail: expect.any(String) });
      expect(await current()).toEqual(before);
    });

    test("a string that is not a reverse-DNS name is 422; a wrong type is 400", async () => {
      const before = await current();
      const refused = ["Com.Example", "example", "com..example", ".com.example", "com.example.", "com.-example", "com.exa_mple", `${"a".repeat(250)}.com`];
      for (const name of refused) {
        const r = await call("PUT", `/v1/api_clients/${home.id}`, { body: { name } });
        expect({ name, status: r.status }).toEqual({ name, status: 422 });
        expect(r.body.title).toBe("Unprocessable Entity");
      }
      for (const body of [{ name: 7 }, { name: "" }, { name: null }, { id: 5 }]) {
        expect({ body, status: (await call("PUT", `/v1/api_clients/${home.id}`, { body })).status }).toEqual({ body, status: 400 });
      }
      expect((await call("PUT", `/v1/api_clients/${home.id}`, { raw: "{nope" })).status).toBe(400);
      expect(await current()).toEqual(before);
    });

    test("an id in the body must equal the path's (422)", async () => {
      const before = await current();
      for (const id of [other.id, "org_somethingelse"]) {
        const r = await call("PUT", `/v1/api_clients/${home.id}`, { body: { id, name: `com.example.x${label()}` } });
        expect(r.body).toMatchObject({ title: "Unprocessable Entity", status: 422 });
      }
      expect(await current()).toEqual(before);
    });

    test("another organization's id, or an unknown one, is 404", async () => {
      for (const id of [other.id, "org_doesnotexist"]) {
        expect((await call("GET", `/v1/api_clients/${id}`)).body).toMatchObject({ title: "Not Found", status: 404 });
        expect((await call("PUT", `/v1/api_clients/${id}`, { body: { name: `com.example.y${label()}` } })).status).toBe(404);
      }
      expect((await call("GET", `/v1/api_clients/${home.id}`, { key: other.key })).status).toBe(404);
      expect((await call("GET", `/v1/api_clients/${other.id}`, { key: other.key })).body.api_client.name).toBe(other.name);
    });

    test("only the owner key holds api_clients: other keys are 403; no key is 401", async () => {
      const made = await call("POST", "/v1/api_keys", { body: { name: `k-${label()}` } });
      const key = made.body.api_key;
      expect((await call("GET", `/v1/api_clients/${home.id}`, { key })).body).toMatchObject({ title: "Forbidden", status: 403 });
      expect((await call("PUT", `/v1/api_clients/${home.id}`, { key, body: { name: `com.example.z${label()}` } })).status).toBe(403);
      expect((await call("GET", `/v1/api_clients/${home.id}`, { key: null })).status).toBe(401);
      expect((await call("PUT", `/v1/api_clients/${home.id}`, { key: "not-a-key", body: {} })).status).toBe(401);
    });

    test("organizations are isolated: queues", async () => {
      const mine = (await call("POST", "/v1/queues", { body: { name: `mine-${label()}` } })).body.queue;
      const theirs = (await call("POST", "/v1/queues", { key: other.key, body: { name: mine.name } })).body.queue;
      expect(theirs.id).not.toBe(mine.id); // queue names are unique per organization only

      const myList = await call("GET", "/v1/queues?per_page=100");
      const theirList = await call("GET", "/v1/queues?per_page=100", { key: other.key });
      expect(myList.body.queues.map((q: { id: string }) => q.id)).toContain(mine.id);
      expect(myList.body.queues.map((q: { id: string }) => q.id)).not.toContain(theirs.id);
      expect(theirList.body.queues.map((q: { id: string }) => q.id)).not.toContain(mine.id);

      expect((await call("GET", `/v1/queues/${theirs.id}`)).status).toBe(404);
      expect((await call("PUT", `/v1/queues/${theirs.id}`, { body: { name: "stolen" } })).status).toBe(404);
      expect((await call("DELETE", `/v1/queues/${theirs.id}`)).status).toBe(404);
      expect((await call("GET", `/v1/queues/${theirs.id}`, { key: other.key })).body.queue.name).toBe(mine.name);
    });

    test("organizations are isolated: api keys", async () => {
      const theirs = (await call("POST", "/v1/api_keys", { key: other.key, body: { name: `theirs-${label()}` } })).body;
      const myKeys = await call("GET", "/v1/api_keys?per_page=100");
      expect(myKeys.body.api_keys.map((k: { id: string }) => k.id)).not.toContain(theirs.id);
      const theirKeys = await call("GET", "/v1/api_keys?per_page=100", { key: other.key });
      expect(theirKeys.body.api_keys.map((k: { id: string }) => k.id)).toContain(theirs.id);

      expect((await call("GET", `/v1/api_keys/${theirs.id}`)).status).toBe(404);
      expect((await call("PUT", `/v1/api_keys/${theirs.id}`, { body: { status: "disabled" } })).status).toBe(404);
      expect((await call("DELETE", `/v1/api_keys/${theirs.id}`)).status).toBe(404);
      expect((await call("GET", "/v1/queues", { key: theirs.api_key })).status).toBe(200);
    });
  });
}

/** The commands other than `serve`. Each opens the database itself, so they work beside a running server. */
import type { Command, Config } from "./config.ts";
import { ConfigError } from "./config.ts";
import { statSync } from "node:fs";
import { openSqliteStore } from "./store/sqlite/index.ts";
import { lockServer, ServerLockHeld } from "./store/sqlite/server-lock.ts";
import { createOrganization } from "./modules/organizations/onboarding.ts";
import { AppError } from "./lib/errors.ts";

type Out = { out: (line: string) => void };

export async function runCommand(command: Exclude<Command, { name: "serve" | "help" | "version" | "completion" }>, config: Config, io: Out): Promise<number> {
  if (config.db === ":memory:") throw new ConfigError(`invalid --db: '${command.name}' needs a database file, not :memory:`);
  if (command.name === "compact") return compact(config, io);
  const store = openSqliteStore(config.db, { durability: config.durability });
  try {
    switch (command.name) {
      case "migrate":
        io.out(`database ${store.path} is up to date`);
        return 0;
      case "orgs-list":
        for (const org of await store.orgs.list()) io.out(`${org.id}\t${org.name}`);
        return 0;
      case "orgs-create":
        return await createOrg(store, command.orgName, io);
      case "backup":
        await store.backup(command.file);
        io.out(`backup written to ${command.file}`);
        return 0;
    }
  } finally {
    await store.close();
  }
}

/**
 * VACUUM rewrites the whole file and holds the write lock meanwhile: a running server would stall for all of it,
 * so compact takes the server lock first and refuses while a server holds the file.
 */
async function compact(config: Config, io: Out): Promise<number> {
  let lock;
  try {
    lock = lockServer(config.db, Date.now());
  } catch (e) {
    if (!(e instanceof ServerLockHeld)) throw e;
    console.error(`fanout: compact rewrites the whole file; stop the server serving ${e.dbPath} first (${e.holder})`);
    return 1;
  }
  try {
    const store = openSqliteStore(config.db, { durability: config.durability });
    const before = fileBytes(store.path);
    try {
      await store.compact();
    } finally {
      await store.close();
    }
    io.out(`compacted ${store.path}: ${megabytes(before)} -> ${megabytes(fileBytes(store.path))}`);
    return 0;
  } finally {
    lock.release();
  }
}

const fileBytes = (path: string) => ["", "-wal"].reduce((sum, suffix) => sum + (statSync(path + suffix, { throwIfNoEntry: false })?.size ?? 0), 0);
const megabytes = (bytes: number) => `${(bytes / 1_048_576).toFixed(1)} MB`;

async function createOrg(store: ReturnType<typeof openSqliteStore>, name: string, io: Out): Promise<number> {
  try {
    const made = await createOrganization(store, name, undefined, Date.now());
    io.out(`organization ${made.org.name} created`);
    io.out(`id:        ${made.org.id}`);
    io.out(`owner key: ${made.secret}`);
    io.out("The owner key is shown once; store it now.");
    return 0;
  } catch (e) {
    if (e instanceof AppError && e.status === 409) {
      console.error(`fanout: ${e.detail}`);
      return 1;
    }
    throw e;
  }
}

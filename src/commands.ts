/** The commands other than `serve`. Each opens the database itself, so they work beside a running server. */
import type { Command, Config } from "./config.ts";
import { ConfigError } from "./config.ts";
import { openSqliteStore } from "./store/sqlite/index.ts";
import { createOrganization } from "./modules/organizations/onboarding.ts";
import { AppError } from "./lib/errors.ts";

type Out = { out: (line: string) => void };

export async function runCommand(command: Exclude<Command, { name: "serve" | "help" | "version" | "completion" }>, config: Config, io: Out): Promise<number> {
  if (config.db === ":memory:") throw new ConfigError(`invalid --db: '${command.name}' needs a database file, not :memory:`);
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

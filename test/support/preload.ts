/**
 * Loaded before every test file (bunfig.toml): after the whole run, the PostgreSQL test databases and the
 * temporary folders still left go.
 */
import { afterAll } from "bun:test";
import { dropCreatedDatabases } from "./postgres.ts";
import { removeTempFolders } from "./temp.ts";

afterAll(async () => {
  removeTempFolders();
  await dropCreatedDatabases();
});

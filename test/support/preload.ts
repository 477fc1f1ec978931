/** Loaded before every test file (bunfig.toml): after the whole run, the PostgreSQL test databases still left go. */
import { afterAll } from "bun:test";
import { dropCreatedDatabases } from "./postgres.ts";

afterAll(() => dropCreatedDatabases());

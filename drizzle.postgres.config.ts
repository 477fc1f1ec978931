import { defineConfig } from "drizzle-kit";

/** The PostgreSQL backend's migrations, beside SQLite's (drizzle.config.ts): `npm run db:generate` runs both. */
export default defineConfig({
  dialect: "postgresql",
  schema: "./src/store/postgres/schema.ts",
  out: "./drizzle/postgres",
});

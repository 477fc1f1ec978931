/**
 * The TLS pair: the operator's PEM files, or a self-signed certificate for localhost, 127.0.0.1 and ::1 made
 * in-process (WebCrypto + @peculiar/x509, no `openssl` program) at first start and kept beside the database so
 * clients can pin it across restarts. A throwaway (`:memory:`) instance keeps its certificate in memory only.
 */
import "reflect-metadata"; // @peculiar/x509's dependency injection needs the Reflect metadata polyfill
import * as x509 from "@peculiar/x509";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { ConfigError, type Config } from "../config.ts";
import type { Tls } from "./server.ts";

export type TlsSource = { tls: Tls; description: string };
const VALIDITY_DAYS = 825; // the longest lifetime browsers and Apple platforms accept for a server certificate

export async function selfSigned(now: Date): Promise<{ cert: string; key: string }> {
  const alg = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
  const keys = await crypto.subtle.generateKey(alg, true, ["sign", "verify"]);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: Buffer.from(crypto.getRandomValues(new Uint8Array(8))).toString("hex").replace(/^[89a-f]/, "1"),
    name: "CN=localhost, O=fanout self-signed",
    notBefore: new Date(now.getTime() - 60_000),
    notAfter: new Date(now.getTime() + VALIDITY_DAYS * 86_400_000),
    signingAlgorithm: alg,
    keys,
    extensions: [
      new x509.SubjectAlternativeNameExtension([
        { type: "dns", value: "localhost" },
        { type: "ip", value: "127.0.0.1" },
        { type: "ip", value: "::1" },
      ]),
      new x509.BasicConstraintsExtension(false),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
    ],
  });
  const key = x509.PemConverter.encode(await crypto.subtle.exportKey("pkcs8", keys.privateKey), "PRIVATE KEY");
  return { cert: cert.toString("pem"), key };
}

function stillValid(certPem: string, now: Date): boolean {
  return new x509.X509Certificate(certPem).notAfter.getTime() > now.getTime() + 86_400_000;
}

function readPem(path: string, flag: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (e) {
    throw new ConfigError(`invalid ${flag}: cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? "error"})`);
  }
}

export async function loadTls(config: Config, dbPath: string, temporary: boolean, now = new Date()): Promise<TlsSource> {
  if (!config.tls) return { tls: null, description: "off (plain HTTP/1.1 and h2c)" };
  if (config.tlsCert && config.tlsKey) {
    return { tls: { cert: readPem(config.tlsCert, "--tls-cert"), key: readPem(config.tlsKey, "--tls-key") }, description: config.tlsCert };
  }
  if (temporary) return { tls: await selfSigned(now), description: "self-signed, in memory" };
  const certPath = join(dirname(dbPath), "tls-cert.pem");
  const keyPath = join(dirname(dbPath), "tls-key.pem");
  if (existsSync(certPath) && existsSync(keyPath) && stillValid(readFileSync(certPath, "utf8"), now)) {
    return { tls: { cert: readFileSync(certPath, "utf8"), key: readFileSync(keyPath, "utf8") }, description: `${certPath} (self-signed)` };
  }
  const pair = await selfSigned(now);
  mkdirSync(dirname(certPath), { recursive: true });
  writeFileSync(keyPath, pair.key, { mode: 0o600 });
  writeFileSync(certPath, pair.cert);
  return { tls: pair, description: `${certPath} (self-signed for localhost, 127.0.0.1 and ::1, made now)` };
}

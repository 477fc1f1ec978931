/** parse-prometheus-text-format ships no types; test/e2e/prometheus.ts describes what it returns. */
declare module "parse-prometheus-text-format" {
  export default function parsePrometheusTextFormat(text: string): unknown[];
}

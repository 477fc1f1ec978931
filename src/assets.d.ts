/** SQL migrations are imported as text (`with { type: "text" }`) so the binary carries them. */
declare module "*.sql" {
  const text: string;
  export default text;
}

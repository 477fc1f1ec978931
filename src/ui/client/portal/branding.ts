/**
 * A portal's branding (docs/portal.md): its name in the title and bar, its logo, and its accent colour, applied as
 * the stylesheet's accent variables (portal.css) through the CSSOM, which the page's policy allows where a
 * style attribute would not be.
 */
export type Branding = { name: string | null; logo_url: string | null; accent: string | null };

/** Black or white text on the colour, whichever reads better (WCAG relative luminance). */
function textOn(hex: string): string {
  const channel = (i: number) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const luminance = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
  return luminance > 0.4 ? "#111418" : "#ffffff";
}

export function applyBranding(b: Branding | null): void {
  const root = document.documentElement;
  document.title = b?.name ? `${b.name} · webhooks` : "Webhooks";
  if (!b?.accent || !/^#[0-9a-f]{6}$/i.test(b.accent)) return void root.classList.remove("branded");
  root.style.setProperty("--brand", b.accent);
  root.style.setProperty("--brand-on", textOn(b.accent));
  root.classList.add("branded");
}

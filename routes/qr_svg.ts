/**
 * A QR code as an SVG drawn on the server (no script, no third-party request, no inline style: a CSP with
 * `default-src 'none'` shows it). The matrix comes from @paulmillr/qr (pure code, no permissions); the drawing
 * is one path of unit squares with a quiet zone of four modules (ISO/IEC 18004 §9.1).
 */
import encodeQR from "@paulmillr/qr";

export function qrSvg(text: string, label: string): string {
  const rows = encodeQR(text, "raw", { ecc: "medium", border: 4 });
  const size = rows.length;
  let d = "";
  rows.forEach((row, y) => row.forEach((on, x) => on && (d += `M${x} ${y}h1v1h-1z`)));
  const escaped = label.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;");
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${size} ${size}" width="232" height="232" ` +
    `role="img" aria-label="${escaped}" shape-rendering="crispEdges" id="qr">` +
    `<rect width="${size}" height="${size}" fill="#fff"/><path d="${d}" fill="#000"/></svg>`;
}

/**
 * A QR code as an SVG drawn on the server (no script, no third-party request, no inline style: a CSP with
 * `default-src 'none'` shows it). The matrix comes from @paulmillr/qr (pure code, no permissions); the drawing
 * is one path of unit squares with a quiet zone of four modules (ISO/IEC 18004 §9.1). Each code is read back
 * with the same package's decoder from its pixels before it is shown, and drawn with another mask pattern if
 * that fails (about one code in fifty with the automatic mask), so that no page shows a code a camera may not
 * read.
 */
import encodeQR from "@paulmillr/qr";
import decodeQR from "@paulmillr/qr/decode.js";

type Mask = 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7;

/** Whether the matrix reads back as `text` from a picture of it (8 pixels a module). */
function readsBack(rows: boolean[][], text: string): boolean {
  const scale = 8, w = rows.length * scale;
  const data = new Uint8Array(w * w * 4).fill(255);
  rows.forEach((row, y) =>
    row.forEach((on, x) => {
      if (!on) return;
      for (let dy = 0; dy < scale; dy++) {
        for (let dx = 0; dx < scale; dx++) {
          const i = ((y * scale + dy) * w + x * scale + dx) * 4;
          data[i] = data[i + 1] = data[i + 2] = 0;
        }
      }
    })
  );
  try {
    return decodeQR({ width: w, height: w, data }) === text;
  } catch {
    return false; // the decoder found no code: the check failed
  }
}

function matrix(text: string): boolean[][] {
  const first = encodeQR(text, "raw", { ecc: "medium", border: 4 });
  if (readsBack(first, text)) return first;
  for (const mask of [0, 1, 2, 6, 7, 3, 5, 4] as Mask[]) {
    const rows = encodeQR(text, "raw", { ecc: "medium", border: 4, mask });
    if (readsBack(rows, text)) return rows;
  }
  return first;
}

export function qrSvg(text: string, label: string): string {
  const rows = matrix(text);
  const size = rows.length;
  let d = "";
  rows.forEach((row, y) => row.forEach((on, x) => on && (d += `M${x} ${y}h1v1h-1z`)));
  const escaped = label.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;");
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${size} ${size}" width="232" height="232" ` +
    `role="img" aria-label="${escaped}" shape-rendering="crispEdges" id="qr">` +
    `<rect width="${size}" height="${size}" fill="#fff"/><path d="${d}" fill="#000"/></svg>`;
}

/** Tiny inline-SVG charts for the self-contained HTML reports (no library, no CDN). */

export interface Series {
  name: string;
  points: [number, number][];
  color?: string;
  dashed?: boolean;
}

const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf', '#393b79', '#637939', '#843c39'];
export const color = (i: number) => PALETTE[i % PALETTE.length]!;
const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
const W = 760;
const H = 260;
const M = { l: 56, r: 150, t: 24, b: 34 };

function niceTicks(max: number): number[] {
  if (!(max > 0)) return [0];
  const step0 = max / 5;
  const mag = 10 ** Math.floor(Math.log10(step0));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= step0)!;
  const out: number[] = [];
  for (let v = 0; ; v += step) {
    out.push(v);
    if (v >= max - 1e-9) return out;
  }
}

const label = (v: number) => (v >= 1000 ? `${+(v / 1000).toFixed(1)}k` : `${+v.toFixed(v < 10 ? 2 : 0)}`);

/** Line chart; logY for latencies (values ≤ 0 are drawn at the floor). */
export function lineChart(title: string, series: Series[], o: { xLabel: string; yLabel: string; logY?: boolean; stacked?: boolean; marks?: { x: number; text: string }[] }): string {
  const all = series.flatMap((s) => s.points);
  if (all.length === 0) return `<p><em>${esc(title)}: no data</em></p>`;
  const xMin = Math.min(...all.map((p) => p[0]));
  const xMax = Math.max(...all.map((p) => p[0]), xMin + 1);
  let stacked = series;
  if (o.stacked) {
    const acc = new Map<number, number>();
    stacked = series.map((s) => ({ ...s, points: s.points.map(([x, y]) => { const v = (acc.get(x) ?? 0) + y; acc.set(x, v); return [x, v] as [number, number]; }) }));
  }
  const yValues = stacked.flatMap((s) => s.points.map((p) => p[1])).filter((v) => Number.isFinite(v));
  const yMaxRaw = Math.max(...yValues, o.logY ? 1 : 0);
  const pw = W - M.l - M.r;
  const ph = H - M.t - M.b;
  const x = (v: number) => M.l + ((v - xMin) / (xMax - xMin)) * pw;
  let y: (v: number) => number;
  let ticks: number[];
  if (o.logY) {
    const lo = 0.1;
    const hi = 10 ** Math.ceil(Math.log10(Math.max(yMaxRaw, 1)));
    y = (v) => M.t + ph - ((Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * ph;
    ticks = [];
    for (let t = lo; t <= hi * 1.001; t *= 10) ticks.push(t);
  } else {
    ticks = niceTicks(yMaxRaw * 1.05);
    const top = ticks[ticks.length - 1]! || 1;
    y = (v) => M.t + ph - (v / top) * ph;
  }
  const parts: string[] = [`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" font-family="sans-serif" font-size="11">`];
  parts.push(`<text x="${M.l}" y="14" font-size="13" font-weight="bold">${esc(title)}</text>`);
  for (const t of ticks) parts.push(`<line x1="${M.l}" x2="${M.l + pw}" y1="${y(t)}" y2="${y(t)}" stroke="#eee"/><text x="${M.l - 4}" y="${y(t) + 4}" text-anchor="end">${label(t)}</text>`);
  for (const t of niceTicks(xMax - Math.ceil(xMin))) {
    const v = Math.ceil(xMin) + t;
    if (v <= xMax) parts.push(`<text x="${x(v)}" y="${H - M.b + 14}" text-anchor="middle">${label(v)}</text>`);
  }
  parts.push(`<text x="${M.l + pw / 2}" y="${H - 4}" text-anchor="middle">${esc(o.xLabel)}</text>`);
  parts.push(`<text transform="translate(12 ${M.t + ph / 2}) rotate(-90)" text-anchor="middle">${esc(o.yLabel)}</text>`);
  parts.push(`<rect x="${M.l}" y="${M.t}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`);
  for (const m of o.marks ?? []) {
    parts.push(`<line x1="${x(m.x)}" x2="${x(m.x)}" y1="${M.t}" y2="${M.t + ph}" stroke="#aaa" stroke-dasharray="3 3"/><text x="${x(m.x) + 2}" y="${M.t + 10}" fill="#666">${esc(m.text)}</text>`);
  }
  stacked.forEach((s, i) => {
    const c = s.color ?? color(i);
    const pts = s.points.filter((p) => Number.isFinite(p[1])).map(([a, b]) => `${x(a).toFixed(1)},${y(b).toFixed(1)}`).join(' ');
    if (o.stacked) {
      const below = i === 0 ? s.points.map(([a]) => [a, 0] as [number, number]) : stacked[i - 1]!.points;
      const back = [...below].reverse().map(([a, b]) => `${x(a).toFixed(1)},${y(b).toFixed(1)}`).join(' ');
      parts.push(`<polygon points="${pts} ${back}" fill="${c}" fill-opacity="0.55" stroke="${c}" stroke-width="0.8"/>`);
    } else {
      parts.push(`<polyline points="${pts}" fill="none" stroke="${c}" stroke-width="1.5"${s.dashed ? ' stroke-dasharray="4 3"' : ''}/>`);
    }
    const ly = M.t + 12 + i * 14;
    parts.push(`<rect x="${W - M.r + 8}" y="${ly - 8}" width="10" height="10" fill="${c}"/><text x="${W - M.r + 22}" y="${ly + 1}">${esc(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('');
}

/**
 * Vega-lite spec → SVG (vega's headless renderer) → PNG (resvg). resvg maps vega's `sans-serif` to DejaVu Sans
 * explicitly: left to its defaults it picks the first system font (DejaVu Serif here) and drops bold.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Resvg } from '@resvg/resvg-js';
import * as vega from 'vega';
import * as vl from 'vega-lite';
import type { TopLevelSpec } from 'vega-lite';

export const PNG_SCALE = 2;

export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const view = new vega.View(vega.parse(vl.compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

export function svgToPng(svg: string): Buffer {
  return new Resvg(svg, {
    background: 'white',
    fitTo: { mode: 'zoom', value: PNG_SCALE },
    font: { loadSystemFonts: true, sansSerifFamily: 'DejaVu Sans', defaultFontFamily: 'DejaVu Sans' },
  }).render().asPng();
}

/** Writes `<name>.svg` and `<name>.png` into `dir`; returns the two file names. */
export async function writePlot(dir: string, name: string, spec: TopLevelSpec): Promise<string[]> {
  const svg = await renderSvg(spec);
  await writeFile(join(dir, `${name}.svg`), svg);
  await writeFile(join(dir, `${name}.png`), svgToPng(svg));
  return [`${name}.svg`, `${name}.png`];
}

// Pieces the live pages share: number formats, the health badge, lag with its trend, and a
// uPlot chart that follows its container's width (ResizeObserver) and can draw on a log
// scale, so a 10 s spike and a 2 ms normal latency show on the same chart.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

export type Frame = [number, Record<string, number | null>];

export function fmt(v: number | null | undefined, d = 1): string {
  return v === null || v === undefined || Number.isNaN(v) ? '–' : v.toFixed(d);
}

export function Health(p: { h?: string }) {
  if (!p.h) return <span class="health none">no heartbeat yet</span>;
  const cls = p.h === 'ok' ? 'ok' : p.h === 'falling behind' ? 'behind' : 'degraded';
  return <span class={'health ' + cls} data-health={p.h}>{p.h === 'falling behind' ? '⚠ falling behind' : p.h}</span>;
}

/** Lag in messages and its slope: ↑ grows, ↓ shrinks, → steady (within ±0.5/s). */
export function Lag(p: { lag?: number | null; trend?: number | null }) {
  if (p.lag === undefined || p.lag === null) return <>–</>;
  const t = p.trend;
  const arrow = t === undefined || t === null ? '' : t > 0.5 ? ' ↑' : t < -0.5 ? ' ↓' : ' →';
  const title = t === undefined || t === null ? undefined : `${t >= 0 ? '+' : ''}${t.toFixed(1)}/s`;
  return <span class={t && t > 0.5 ? 'lag growing' : 'lag'}>{p.lag}{arrow && <span aria-label={`trend ${title}`}>{arrow} {title}</span>}</span>;
}

const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f'];

export interface Series { key: string; label: string; group?: number; dash?: boolean; }

export function Chart(p: { title: string; frames: Frame[]; series: Series[]; unit: string; log?: boolean }) {
  const ref = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const sig = p.series.map((s) => s.key).join('|') + (p.log ? '#log' : '');
  const width = () => Math.max(240, (ref.current?.clientWidth ?? 400) - 8);
  useEffect(() => {
    if (!ref.current) return;
    plot.current?.destroy();
    const y: uPlot.Scale = p.log
      ? { distr: 3, log: 10, range: (_u, lo, hi) => (lo > 0 && hi > 0 ? uPlot.rangeLog(lo, hi, 10, true) : [0.1, 1000]) as uPlot.Range.MinMax }
      : {};
    plot.current = new uPlot({
      width: width(), height: 190, title: p.title,
      scales: { y },
      series: [{}, ...p.series.map((s, i) => ({
        label: s.label, stroke: COLOURS[(s.group ?? i) % COLOURS.length], width: s.dash ? 1.5 : 2,
        dash: s.dash ? [6, 4] : undefined,
      }))],
      axes: [{}, { label: p.unit, size: 64 }],
    }, [[]], ref.current);
    // Charts follow the window: a new width for each change of the container's.
    const ro = new ResizeObserver(() => plot.current?.setSize({ width: width(), height: 190 }));
    ro.observe(ref.current);
    return () => { ro.disconnect(); plot.current?.destroy(); plot.current = null; };
  }, [sig]);
  useEffect(() => {
    const xs = p.frames.map(([t]) => t / 1000);
    const ys = p.series.map((s) => p.frames.map(([, v]) => {
      const x = v[s.key];
      return x === undefined || x === null || (p.log && x <= 0) ? null : x;
    }));
    plot.current?.setData([xs, ...ys] as uPlot.AlignedData);
  }, [p.frames, sig]);
  return <figure class="chart"><div ref={ref} role="img" aria-label={p.title} data-testid="chart" /></figure>;
}

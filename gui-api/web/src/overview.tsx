// The overview: live copies/s in (per NF type) and out (per feed), latency p50/p99, lag,
// dead letters, workers and active alarms. Frames arrive as server-sent events from
// /console/live (ndd-gui-api keeps the history; the page keeps what it has been sent).
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { request } from './api';
import { Page } from './ui';

type Frame = [number, Record<string, number | null>];
interface Live { frames: Frame[]; status?: { workers: any[]; feeds: any[]; database?: string }; }
const MAX = 300;

function keys(frames: Frame[], prefix: string): string[] {
  const s = new Set<string>();
  for (const [, v] of frames) for (const k of Object.keys(v)) if (k.startsWith(prefix)) s.add(k.slice(prefix.length));
  return [...s].sort();
}

function Chart(p: { title: string; frames: Frame[]; series: [string, string][]; unit: string }) {
  const ref = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const sig = p.series.map(([k]) => k).join('|');
  useEffect(() => {
    if (!ref.current) return;
    const width = Math.max(280, ref.current.clientWidth - 8);
    plot.current?.destroy();
    plot.current = new uPlot({
      width, height: 180, title: p.title,
      series: [{}, ...p.series.map(([, label], i) => ({
        label, stroke: ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#8c564b', '#e377c2'][i % 6], width: 2,
      }))],
      axes: [{}, { label: p.unit, size: 60 }],
    }, [[]], ref.current);
    return () => { plot.current?.destroy(); plot.current = null; };
  }, [sig]);
  useEffect(() => {
    const xs = p.frames.map(([t]) => t / 1000);
    const ys = p.series.map(([k]) => p.frames.map(([, v]) => (v[k] ?? null) as number));
    plot.current?.setData([xs, ...ys] as any);
  }, [p.frames, sig]);
  return <figure class="chart"><div ref={ref} role="img" aria-label={p.title} /></figure>;
}

function fmt(v: number | null | undefined, d = 1): string {
  return v === null || v === undefined ? '–' : v.toFixed(d);
}

export function Overview() {
  const [live, setLive] = useState<Live>({ frames: [] });
  const [alarms, setAlarms] = useState<any[]>([]);
  useEffect(() => {
    const es = new EventSource('/console/live');
    es.onmessage = (e) => {
      const m = JSON.parse(e.data);
      setLive((old) => ({ frames: [...old.frames, ...m.frames].slice(-MAX), status: m.status ?? old.status }));
    };
    const poll = async () => {
      const r = await request('GET', '/api/v1/alarms?state=active&limit=50');
      if (r.status === 200) setAlarms(r.data.items ?? r.data);
    };
    poll();
    const t = setInterval(poll, 2000);
    return () => { es.close(); clearInterval(t); };
  }, []);
  const f = live.frames;
  const last = f.length ? f[f.length - 1][1] : {};
  const feeds = keys(f, 'egress/');
  const nfs = keys(f, 'ingress/');
  const workers = live.status?.workers ?? [];
  const up = workers.filter((w) => w.state === 'up').length;
  return (
    <Page title="Overview">
      <div class="cards">
        <div class="card"><h2>Workers</h2><p data-testid="workers-up">{up} up, {workers.length - up} down</p></div>
        <div class="card"><h2>Active alarms</h2><p data-testid="alarms-active">{alarms.length}</p></div>
        <div class="card"><h2>Database</h2><p>{live.status?.database ?? '–'}</p></div>
      </div>
      <div class="charts">
        <Chart title="Ingress copies/s per NF type" unit="copies/s" frames={f} series={nfs.map((n) => ['ingress/' + n, n])} />
        <Chart title="Egress copies/s per feed" unit="copies/s" frames={f} series={feeds.map((n) => ['egress/' + n, n])} />
        <Chart title="End-to-end latency (s)" unit="s" frames={f}
               series={feeds.flatMap((n) => [['p50/' + n, n + ' p50'], ['p99/' + n, n + ' p99']] as [string, string][])} />
      </div>
      <h2>Feeds</h2>
      <table>
        <caption class="sr-only">Per-feed figures, latest sample</caption>
        <thead><tr><th scope="col">Feed</th><th scope="col">Egress copies/s</th><th scope="col">p50 s</th>
          <th scope="col">p99 s</th><th scope="col">Lag</th><th scope="col">Dead letters</th><th scope="col">Health</th></tr></thead>
        <tbody>
          {[...new Set([...feeds, ...(live.status?.feeds ?? []).map((x) => x.name)])].map((n) => {
            const st = live.status?.feeds.find((x) => x.name === n);
            return (
              <tr>
                <th scope="row">{n}</th>
                <td data-testid={'rate-' + n}>{fmt(last['egress/' + n] as number)}</td>
                <td>{fmt(last['p50/' + n] as number, 4)}</td>
                <td>{fmt(last['p99/' + n] as number, 4)}</td>
                <td>{st?.lag ?? last['lag/' + n] ?? '–'}</td>
                <td>{fmt(last['dlq/' + n] as number, 0)}</td>
                <td>{st?.health ?? '–'}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <h2>Workers</h2>
      <ul class="workers">
        {workers.map((w) => <li class={w.state}>{w.service}/{w.instance}: {w.state}</li>)}
      </ul>
    </Page>
  );
}

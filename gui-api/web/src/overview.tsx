// The overview: live copies/s in (per NF type) and out (per feed), lag per feed, latency
// p50/p99 in milliseconds on a log scale (a spike and the normal latency on one chart),
// workers and active alarms. Frames arrive as server-sent events from /console/live
// (ndd-gui-api keeps the history; the page keeps what it has been sent).
import { useEffect, useState } from 'preact/hooks';
import { request } from './api';
import { Page } from './ui';
import type { Frame, Series } from './live';
import { Chart, Health, Lag, fmt } from './live';

export interface LiveStatus { workers: any[]; feeds: any[]; database?: string; aggregation?: any[]; correlation?: any[]; }
interface Live { frames: Frame[]; status?: LiveStatus; }
const MAX = 300;

function keys(frames: Frame[], prefix: string): string[] {
  const s = new Set<string>();
  for (const [, v] of frames) for (const k of Object.keys(v)) if (k.startsWith(prefix)) s.add(k.slice(prefix.length));
  return [...s].sort();
}

/** The stream of live frames and the latest status summary. */
export function useLive(): Live {
  const [live, setLive] = useState<Live>({ frames: [] });
  useEffect(() => {
    const es = new EventSource('/console/live');
    es.onmessage = (e) => {
      const m = JSON.parse(e.data);
      setLive((old) => ({ frames: [...old.frames, ...m.frames].slice(-MAX), status: m.status ?? old.status }));
    };
    return () => es.close();
  }, []);
  return live;
}

export function Overview() {
  const live = useLive();
  const [alarms, setAlarms] = useState<any[]>([]);
  useEffect(() => {
    const poll = async () => {
      const r = await request('GET', '/api/v1/alarms?state=active&limit=50');
      if (r.status === 200) setAlarms(r.data.items ?? r.data);
    };
    poll();
    const t = setInterval(poll, 2000);
    return () => clearInterval(t);
  }, []);
  const f = live.frames;
  const last = f.length ? f[f.length - 1][1] : {};
  const stFeeds = live.status?.feeds ?? [];
  const feeds = [...new Set([...keys(f, 'egress/'), ...keys(f, 'lag/'), ...stFeeds.map((x) => x.name)])].sort();
  const nfs = keys(f, 'ingress/');
  const scraped = new Set(keys(f, 'egress/')); /* with metrics, the frames' rate; else /status's */
  const workers = live.status?.workers ?? [];
  const up = workers.filter((w) => w.state === 'up').length;
  const lat: Series[] = feeds.flatMap((n, i) => [{ key: 'p50/' + n, label: n + ' p50', group: i },
    { key: 'p99/' + n, label: n + ' p99', group: i, dash: true }]);
  return (
    <Page title="Overview">
      <div class="cards">
        <div class="card"><h2>Workers</h2><p data-testid="workers-up">{up} up, {workers.length - up} down</p></div>
        <div class="card"><h2>Active alarms</h2><p data-testid="alarms-active">{alarms.length}</p></div>
        <div class="card"><h2>Database</h2><p>{live.status?.database ?? '–'}</p></div>
      </div>
      <div class="charts">
        <Chart title="Ingress copies/s per NF type" unit="copies/s" frames={f} series={nfs.map((n) => ({ key: 'ingress/' + n, label: n }))} />
        <Chart title="Egress copies/s per feed" unit="copies/s" frames={f} series={feeds.map((n) => ({ key: 'egress/' + n, label: n }))} />
        <Chart title="Lag per feed (messages)" unit="messages" frames={f} series={feeds.map((n) => ({ key: 'lag/' + n, label: n }))} />
        <Chart title="Latency p50 (solid) and p99 (dashed), ms, log scale" unit="ms" log frames={f} series={lat} />
      </div>
      <h2>Feeds</h2>
      {!feeds.length && <p class="empty">No feed reports yet: create one on the Feeds page; its figures show here once an adapter runs it.</p>}
      {feeds.length > 0 && <table>
        <caption class="sr-only">Per-feed figures, latest sample</caption>
        <thead><tr><th scope="col">Feed</th><th scope="col" class="num">Egress copies/s</th><th scope="col" class="num">p50 ms</th>
          <th scope="col" class="num">p99 ms</th><th scope="col" class="num">Lag (trend)</th><th scope="col" class="num">Dead letters</th><th scope="col">Health</th></tr></thead>
        <tbody>
          {feeds.map((n) => {
            const st = stFeeds.find((x) => x.name === n);
            const rate = scraped.has(n) ? last['egress/' + n] : st?.rate_per_s;
            return (
              <tr>
                <th scope="row">{n}{st?.origin === 'file' && <small class="origin"> (feeds file)</small>}</th>
                <td data-testid={'rate-' + n} class="num">{fmt(rate as number)}</td>
                <td class="num">{fmt((last['p50/' + n] as number) ?? st?.latency_ms?.p50, 1)}</td>
                <td class="num">{fmt((last['p99/' + n] as number) ?? st?.latency_ms?.p99, 1)}</td>
                <td class="num" data-testid={'lag-' + n}><Lag lag={st?.lag ?? last['lag/' + n]} trend={st?.lag_trend_per_s} /></td>
                <td class="num">{st?.dead_lettered_total ?? fmt(last['dlq/' + n] as number, 0)}</td>
                <td data-testid={'health-' + n}><Health h={st?.health} /></td>
              </tr>
            );
          })}
        </tbody>
      </table>}
      <h2>Workers</h2>
      {!workers.length && <p class="empty">No worker heartbeat yet: workers report on the events topic once they run.</p>}
      <ul class="workers">
        {workers.map((w) => <li class={w.state}>{w.service}/{w.instance}: {w.state}</li>)}
      </ul>
    </Page>
  );
}

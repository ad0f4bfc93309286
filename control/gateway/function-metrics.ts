/**
 * The dispatch metrics of the app functions, for the gateway's GET /metrics. Under `cornserve up` the functions run
 * their task graphs themselves, so the dispatcher's counters live in each function process. At each scrape the
 * gateway asks every ready function for its registry as prom-client JSON (GET /metrics?format=json, over the same
 * local address it invokes it on) and prom-client's AggregatorRegistry sums them with the gateway's own dispatcher's,
 * series by series, as it does for cluster workers. Pull at scrape time: nothing to keep in step between scrapes, and
 * a function that restarted simply reports from zero (a counter reset, which Prometheus' rate() handles). A function
 * that does not answer within the bound is left out of that scrape, never failing it.
 */
import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import { httpRequest } from '../../lib/unix-url.js';

/** A function's registry as prom-client JSON. */
export type MetricsJson = Array<MetricObjectWithValues<MetricValue<string>>>;

const SCRAPE_TIMEOUT_MS = 2_000;

/** Each answering function's metrics (the ones that fail or time out are left out). */
export async function functionMetrics(urls: string[], timeoutMs = SCRAPE_TIMEOUT_MS): Promise<MetricsJson[]> {
  const all = await Promise.all(urls.map((url) => fetchMetrics(url, timeoutMs).catch(() => undefined)));
  return all.filter((m): m is MetricsJson => m !== undefined);
}

function fetchMetrics(url: string, timeoutMs: number): Promise<MetricsJson | undefined> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}/metrics?format=json`, { method: 'GET', timeout: timeoutMs }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return resolve(undefined); // a function that dispatches through the dispatcher service has none
      }
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.once('end', () => {
        try {
          resolve(JSON.parse(Buffer.concat(parts).toString('utf8')) as MetricsJson);
        } catch (e) {
          reject(e as Error);
        }
      });
      res.once('error', reject);
    });
    req.once('timeout', () => req.destroy(new Error(`no metrics from ${url} within ${timeoutMs} ms`)));
    req.once('error', reject);
    req.end();
  });
}

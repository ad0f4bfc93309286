/**
 * The one way an executor fetches a URL a request named (SSRF guard). By default it refuses every address that
 * is not public unicast — loopback, link-local, private (RFC 1918), unique local (ULA), carrier-grade NAT,
 * unspecified, multicast, broadcast, the other special-purpose ranges, and the cloud metadata addresses:
 *
 *  - the check runs on the ADDRESS the socket connects to, after DNS resolution, inside the connection itself
 *    (an undici connector): the checked address is the connected one, so DNS rebinding has no window;
 *  - redirects are followed by hand (at most `maxRedirects`), each hop a new checked request;
 *  - `allowPrivate` opens addresses explicitly: CIDRs (`10.0.0.0/8`, `::1/128`), single addresses, or host names
 *    (`localhost`, `*.corp.example` for sub-domains) whose addresses may then be private. A metadata address opens
 *    only when it is named exactly (`169.254.169.254` or `/32`), never through a wider range or a host name;
 *  - `onlyHosts` (optional) restricts which host names may be fetched at all, on every hop.
 *
 *   const guard = fetchGuard({ allowPrivate: ['127.0.0.1/32'] });
 *   const { response, url } = await guard.fetch('http://127.0.0.1:9000/cat.png', { signal });
 *
 * Refusals are UrlNotAllowedError (the caller turns them into its 4xx code, e.g. ERIC_URL_NOT_ALLOWED).
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Response } from 'undici';
import { Agent, buildConnector, fetch as undiciFetch } from './undici.js';

/** A refused URL: scheme, host or address outside the policy, or a redirect to one. */
export class UrlNotAllowedError extends Error {
  override readonly name = 'UrlNotAllowedError';
}

/** A redirect chain longer than the policy allows. */
export class TooManyRedirectsError extends Error {
  override readonly name = 'TooManyRedirectsError';
}

/** Resolves a host name to all its addresses (dns.lookup with `all: true`; tests inject their own). */
export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

export interface FetchGuardOptions {
  /** CIDRs, addresses or host names (`*.domain` for sub-domains) that may be private. @default [] (none) */
  allowPrivate?: readonly string[];
  /** Host names that may be fetched at all (`*.domain` for sub-domains). @default [] (any) */
  onlyHosts?: readonly string[];
  /** @default 3 */
  maxRedirects?: number;
  /** @default dns.lookup(host, {all: true}) */
  resolve?: Resolver;
}

/** Addresses of cloud metadata services (AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle, Alibaba, AWS IPv6). */
const METADATA_ADDRESSES = new Set(['169.254.169.254', '169.254.170.2', '192.0.0.192', '100.100.100.200', 'fd00:ec2::254']);

const RANGE_NAMES: Record<string, string> = {
  loopback: 'a loopback address',
  linkLocal: 'a link-local address',
  private: 'a private (RFC 1918) address',
  uniqueLocal: 'a unique local (ULA) address',
  carrierGradeNat: 'a carrier-grade NAT address',
  unspecified: 'the unspecified address',
  multicast: 'a multicast address',
  broadcast: 'the broadcast address',
};

type Ip = ipaddr.IPv4 | ipaddr.IPv6;

/** The address in canonical form (IPv4-mapped IPv6 as IPv4), or undefined when `text` is not an address. */
function parseIp(text: string): Ip | undefined {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (!isIP(bare)) return undefined;
  return ipaddr.process(bare);
}

/** Why `address` is not a public unicast address, or undefined when it is. */
export function blockedBecause(address: string): string | undefined {
  const ip = parseIp(address);
  if (!ip) return `${address} is not an IP address`;
  if (METADATA_ADDRESSES.has(ip.toString())) return 'a cloud metadata address';
  const range = ip.range();
  if (range === 'unicast') return undefined;
  return RANGE_NAMES[range] ?? `a special-purpose address (${range})`;
}

const hostMatches = (host: string, pattern: string) => {
  const h = host.toLowerCase().replace(/\.$/, '');
  const p = pattern.toLowerCase();
  return p.startsWith('*.') ? h.endsWith(p.slice(1)) : h === p;
};

/** `allowPrivate` parsed once: ranges and host patterns. Throws on an entry that is neither. */
function compileAllowlist(entries: readonly string[]): { ranges: Array<[Ip, number]>; hosts: string[] } {
  const ranges: Array<[Ip, number]> = [];
  const hosts: string[] = [];
  for (const raw of entries) {
    const e = raw.trim();
    if (e.includes('/')) {
      if (!ipaddr.isValidCIDR(e)) throw new Error(`private URL allowlist entry ${JSON.stringify(raw)} is not a valid CIDR`);
      const [ip, bits] = ipaddr.parseCIDR(e);
      const mapped = ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress() ? (ip as ipaddr.IPv6).toIPv4Address() : undefined;
      ranges.push(mapped ? [mapped, Math.max(0, bits - 96)] : [ip, bits]);
    } else if (parseIp(e)) {
      const ip = parseIp(e)!;
      ranges.push([ip, ip.kind() === 'ipv4' ? 32 : 128]);
    } else if (/^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i.test(e)) {
      hosts.push(e.toLowerCase());
    } else {
      throw new Error(`private URL allowlist entry ${JSON.stringify(raw)} is neither a CIDR, an address nor a host name`);
    }
  }
  return { ranges, hosts };
}

/** The environment variable an executor reads its private allowlist from when no flag gives one (comma-separated). */
export const PRIVATE_URLS_ENV = 'CORNSERVE_ALLOW_PRIVATE_URLS';

/** The private allowlist from the environment (`cornserve up` passes its own environment to its executors). */
export const privateAllowlistFromEnv = (env: NodeJS.ProcessEnv = process.env): string[] =>
  (env[PRIVATE_URLS_ENV] ?? '').split(',').map((s) => s.trim()).filter(Boolean);

/** Checks every entry of an allowlist (start-up validation of an executor's options); returns it. */
export function validatePrivateAllowlist<T extends readonly string[]>(entries: T): T {
  compileAllowlist(entries);
  return entries;
}

export class FetchGuard {
  readonly #allow: ReturnType<typeof compileAllowlist>;
  readonly #onlyHosts: readonly string[];
  readonly #maxRedirects: number;
  readonly #resolve: Resolver;
  readonly #agent: Agent;

  constructor(opts: FetchGuardOptions = {}) {
    this.#allow = compileAllowlist(opts.allowPrivate ?? []);
    this.#onlyHosts = opts.onlyHosts ?? [];
    this.#maxRedirects = opts.maxRedirects ?? 3;
    this.#resolve = opts.resolve ?? ((host) => dnsLookup(host, { all: true, verbatim: true }));
    const connect = buildConnector({});
    // Every connection resolves its host, checks the addresses and connects to the checked one (the URL's host
    // stays the TLS server name and the Host header).
    this.#agent = new Agent({
      connect: (options, callback) => {
        this.addressFor(options.hostname).then(
          (address) => connect({ ...options, hostname: address }, callback),
          (err: Error) => callback(err, null),
        );
      },
    });
  }

  /** Whether `ip` (reached through `host`) is open: public unicast, or opened by the allowlist. */
  #refusal(ip: string, host: string): string | undefined {
    const why = blockedBecause(ip);
    if (!why) return undefined;
    const addr = parseIp(ip);
    if (addr) {
      const metadata = METADATA_ADDRESSES.has(addr.toString());
      for (const [net, bits] of this.#allow.ranges) {
        if (net.kind() !== addr.kind() || !addr.match(net, bits)) continue;
        if (!metadata || bits === (addr.kind() === 'ipv4' ? 32 : 128)) return undefined;
      }
      if (!metadata && this.#allow.hosts.some((p) => hostMatches(host, p))) return undefined;
    }
    return `${host === ip ? ip : `${host} (${ip})`} is ${why}; it may be fetched only when the private URL allowlist opens it`;
  }

  /** The address a connection to `hostname` goes to; every address it resolves to must be open (else UrlNotAllowedError). */
  async addressFor(hostname: string): Promise<string> {
    const literal = parseIp(hostname);
    if (literal) {
      const ip = literal.toString();
      const refusal = this.#refusal(ip, ip);
      if (refusal) throw new UrlNotAllowedError(refusal);
      return ip;
    }
    const addresses = await this.#resolve(hostname);
    if (addresses.length === 0) throw new Error(`${hostname} resolves to no address`);
    for (const { address } of addresses) {
      const refusal = this.#refusal(address, hostname);
      if (refusal) throw new UrlNotAllowedError(refusal);
    }
    return addresses[0]!.address;
  }

  #checkUrl(u: URL): void {
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new UrlNotAllowedError(`${u.protocol} URLs are not fetched`);
    const host = u.hostname.replace(/^\[|\]$/g, '');
    if (this.#onlyHosts.length && !this.#onlyHosts.some((p) => hostMatches(host, p))) throw new UrlNotAllowedError(`host ${host} is not in the URL allowlist`);
  }

  /**
   * GETs `url`, following redirects by hand, each hop checked (scheme, host list, addresses at connect time).
   * Resolves with the final response (any non-redirect status) and its URL.
   */
  async fetch(url: string, init: { signal?: AbortSignal; headers?: Record<string, string> } = {}): Promise<{ response: Response; url: string }> {
    let current = new URL(url);
    for (let hop = 0; ; hop++) {
      this.#checkUrl(current);
      let response: Response;
      try {
        response = await undiciFetch(current, { redirect: 'manual', dispatcher: this.#agent, ...init });
      } catch (e) {
        const cause = (e as { cause?: unknown }).cause;
        throw cause instanceof UrlNotAllowedError ? cause : e;
      }
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || !location) return { response, url: current.href };
      await response.body?.cancel();
      if (hop >= this.#maxRedirects) throw new TooManyRedirectsError(`${url.slice(0, 200)} redirects more than ${this.#maxRedirects} times`);
      current = new URL(location, current);
    }
  }

  close(): Promise<void> {
    return this.#agent.close();
  }
}

const shared = new Map<string, FetchGuard>();

/** One guard (one connection pool) per distinct policy in this process. */
export function fetchGuard(opts: Omit<FetchGuardOptions, 'resolve'> = {}): FetchGuard {
  const key = JSON.stringify([opts.allowPrivate ?? [], opts.onlyHosts ?? [], opts.maxRedirects ?? 3]);
  let g = shared.get(key);
  if (!g) shared.set(key, (g = new FetchGuard(opts)));
  return g;
}

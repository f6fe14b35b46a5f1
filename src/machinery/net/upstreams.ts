/**
 * The upstream list of a load balancer, scored like siderolabs/go-loadbalancer's (which KubePrism uses): each
 * upstream has a score (starts at 1, +1 per passed health check up to 3, -1 per failed check or failed dial
 * down to -3) and a latency tier (0 fastest .. 5; starts at 1; set by each passed check from its latency).
 * An upstream with a score below zero is not picked; among the others the lowest tier wins, round-robin within
 * it. Pure bookkeeping: the probing and the proxying live in src/host/tcp-balancer.ts.
 */

/** Lower bounds of the latency tiers, in ms (0, 0.1 ms, 1 ms, 10 ms, 100 ms, 1 s). */
const TIER_MIN_MS = [0, 0.1, 1, 10, 100, 1000];
const MAX_TIER = TIER_MIN_MS.length - 1;
const INIT_TIER = 1;
const LOW_SCORE = -3;
const HIGH_SCORE = 3;
const INITIAL_SCORE = 1;

/** The tier of a health check that took `ms`. */
export function latencyTier(ms: number): number {
  for (let i = MAX_TIER; i >= 0; i--) if (ms >= TIER_MIN_MS[i]) return i;
  return 0;
}

interface Node {
  address: string;
  score: number;
  tier: number;
}

export class UpstreamList {
  private nodes: Node[] = [];
  private current = -1;

  constructor(addresses: Iterable<string> = []) {
    this.reconcile(addresses);
  }

  /** Keeps the upstreams still listed (with their scores), drops the others, adds the new ones. */
  reconcile(addresses: Iterable<string>): void {
    const wanted = [...new Set(addresses)];
    this.nodes = this.nodes.filter((n) => wanted.includes(n.address));
    for (const a of wanted) {
      if (!this.nodes.some((n) => n.address === a)) this.nodes.push({ address: a, score: INITIAL_SCORE, tier: INIT_TIER });
    }
    if (this.current >= this.nodes.length) this.current = -1;
  }

  addresses(): string[] {
    return this.nodes.map((n) => n.address);
  }

  /** A passed health check (with its latency tier) or a good connection. */
  up(address: string, tier?: number): void {
    for (const n of this.nodes) {
      if (n.address !== address) continue;
      n.score = Math.min(HIGH_SCORE, n.score + 1);
      if (tier !== undefined) n.tier = Math.max(0, Math.min(MAX_TIER, tier));
    }
  }

  /** A failed health check or a failed dial. */
  down(address: string): void {
    for (const n of this.nodes) if (n.address === address) n.score = Math.max(LOW_SCORE, n.score - 1);
  }

  /** The next upstream to use, or undefined when none is healthy. */
  pick(): string | undefined {
    const n = this.nodes.length;
    for (let tier = 0; tier <= MAX_TIER; tier++) {
      for (let j = 0; j < n; j++) {
        const i = (this.current + 1 + j) % n;
        if (this.nodes[i].tier === tier && this.nodes[i].score >= 0) {
          this.current = i;
          return this.nodes[i].address;
        }
      }
    }
    return undefined;
  }

  /** True when some upstream could be picked (upstream's IsRouteHealthy). */
  healthy(): boolean {
    return this.nodes.some((n) => n.score >= 0);
  }

  score(address: string): number | undefined {
    return this.nodes.find((n) => n.address === address)?.score;
  }
}

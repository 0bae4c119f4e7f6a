// The four ways to rebalance that the report compares (docs/analysis.md, "The rebalance
// report"), in the order the analysis page lists them, and the rows of its comparison table.
// Pure module.

/** The report's `rebalance_protocol` values, each with its name on the page. */
export const PROTOCOLS = [
  ["eager", "eager (classic)"],
  ["cooperative", "cooperative (KIP-429)"],
  ["handoff", "handoff (seed 004)"],
  ["consumer", "consumer (KIP-848)"],
];

/**
 * The comparison's rows from summary.json's `protocols`: the four modes always, in order, each
 * with its figures (null when the history has no rebalance of that mode), then any other key
 * the summary holds (`unknown`), by name.
 */
export function protocolRows(protocols) {
  const figures = protocols || {};
  const known = new Set(PROTOCOLS.map(([key]) => key));
  const rows = PROTOCOLS.map(([key, label]) => ({ key, label, figures: figures[key] ?? null }));
  const others = Object.keys(figures)
    .filter((key) => !known.has(key))
    .sort()
    .map((key) => ({ key, label: key, figures: figures[key] }));
  return [...rows, ...others];
}

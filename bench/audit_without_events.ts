/**
 * domain/audit/audit.ts with `record` writing nothing, for bench/event_cost.ts only: that bench runs a second service
 * with a deno.json whose import map puts this module in domain/audit/audit.ts's place, so that the same admin write
 * can be timed with and without its event through HTTP. The product has no switch that turns auditing off.
 */
export * from "../domain/audit/audit.ts?with-events";

/** Writes no event. */
export function record(_sql: unknown, _event: unknown): Promise<void> {
  return Promise.resolve();
}

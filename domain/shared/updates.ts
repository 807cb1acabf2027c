/** PUT semantics of the whole API: an omitted optional field keeps the stored value; null or "" clears it. */
export function keepOrClear<T>(given: T | null | undefined, stored: T | null): T | null {
  if (given === undefined) return stored;
  return given === null || given === "" ? null : given;
}

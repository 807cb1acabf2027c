/**
 * Wire<T>: a generated model as plain JSON, so that the hand-written clients take their shapes from the
 * generated ones (sdk/src/generated/, from the OpenAPI document) instead of copying them. Two differences:
 * an enum becomes the union of its string values (the generated enums are TypeScript enums, to which a plain
 * `"execute_all"` is not assignable), and a free-form object (`additionalProperties: {}`, which the generator
 * types as a map of strings) becomes `Record<string, unknown>`, as the service accepts any JSON value there.
 */
export type Wire<T> = T extends string ? `${T}`
  : T extends readonly (infer U)[] ? Wire<U>[]
  : T extends object ? string extends keyof T ? Record<string, unknown>
    : { [K in keyof T]: Wire<T[K]> }
  : T;

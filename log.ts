/** The logger every part of the service writes to (HTTP requests and background jobs alike): JSON lines. */
export type Logger = {
  error(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
};
